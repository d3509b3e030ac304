import { readBoundedFile, readFailure } from '../shared/bounded-file.ts';
import { fileURLToPath } from 'node:url';
import { AgentError, badFile, badFlag } from '../shared/errors.ts';
import type { AgentConfig } from '../settings/proxy-settings.ts';
import { renderTemplate, TemplateError } from './template.ts';
import { bootstrapVariables, type BootstrapContext } from './variables.ts';

export const defaultTemplatePath = fileURLToPath(new URL('../../templates/envoy_bootstrap.json', import.meta.url));

/**
 * The bootstrap as text: --customConfigFile as is, otherwise JSON from the
 * template (--templateFile or the default) rendered with our variables.
 */
export async function renderBootstrap(config: AgentConfig, context: BootstrapContext): Promise<string> {
  if (config.customConfigFile) return readCustomBootstrap(config.customConfigFile);
  const path = config.templateFile || defaultTemplatePath;
  const text = await readTemplateFile(path);
  try {
    return `${JSON.stringify(renderTemplate(text, bootstrapVariables(config, context)), null, 2)}\n`;
  } catch (error) {
    if (error instanceof TemplateError) throw new AgentError('BAD_TEMPLATE', `${path}: ${error.message}`, { cause: error });
    throw error;
  }
}

/** Used as is, in Envoy's text formats: JSON, YAML (by extension) or text proto. */
async function readCustomBootstrap(path: string): Promise<string> {
  if (/\.pb$/i.test(path))
    throw badFlag('--customConfigFile', `${path}: binary proto bootstraps are not supported; use JSON, YAML (.yaml/.yml) or text proto (.pb_text)`);
  return readTemplateFile(path);
}

/** Bootstraps are tens of KiB; 16 MiB leaves room for any inline data a custom one carries. */
const templateFileMaxBytes = 16 * 1024 * 1024;

async function readTemplateFile(path: string): Promise<string> {
  try {
    // Only a regular file within the cap: a FIFO or device would hang the start or read without end.
    return (await readBoundedFile(path, { maxBytes: templateFileMaxBytes })).toString('utf8');
  } catch (error) {
    throw badFile(path, `cannot read bootstrap template (${readFailure(error)})`, error);
  }
}
