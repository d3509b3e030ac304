import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { badFile } from '../shared/errors.ts';
import { parseTemplate } from './template.ts';
import type { InjectionInputs } from './types.ts';
import { parseValues } from './values.ts';

/** The shipped template and defaults: `templates/` beside src/ and dist/ alike. */
export const defaultTemplatePath = fileURLToPath(new URL('../../templates/sidecar-injection.yaml', import.meta.url));
export const defaultValuesPath = fileURLToPath(new URL('../../templates/sidecar-injection-values.yaml', import.meta.url));

export interface LoadOptions {
  templatePath?: string | undefined;
  /** The user's values, read over the shipped defaults. */
  valuesPath?: string | undefined;
}

/** Reads and checks the template and values before any manifest is touched. */
export async function loadInjectionInputs(options: LoadOptions = {}): Promise<InjectionInputs> {
  const templatePath = options.templatePath ?? defaultTemplatePath;
  const template = parseTemplate(await readText(templatePath), templatePath);
  const defaults = parseValues(await readText(defaultValuesPath), defaultValuesPath);
  const values = options.valuesPath === undefined ? defaults : parseValues(await readText(options.valuesPath), options.valuesPath, defaults);
  return { template, templatePath, values };
}

/** A file's text; a missing or unreadable file is a usage error naming it. */
export async function readText(path: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    throw badFile(path, `cannot read: ${(error as NodeJS.ErrnoException).code ?? String(error)}`, error);
  }
}
