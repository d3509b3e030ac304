import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { AgentError, badFile } from '../shared/errors.ts';
import type { ProxyConfig } from '../shared/proxy-config.ts';
import { renderTemplate, TemplateError } from './template.ts';
import { bootstrapVariables, type BootstrapContext } from './variables.ts';

export const defaultTemplatePath = fileURLToPath(new URL('../../templates/envoy_bootstrap.json', import.meta.url));

/**
 * The bootstrap as JSON text: --customConfigFile as is, otherwise the
 * template (--templateFile or the default) rendered with our variables.
 */
export async function renderBootstrap(config: ProxyConfig, context: BootstrapContext): Promise<string> {
  if (config.customConfigFile) return readTemplateFile(config.customConfigFile);
  const path = config.templateFile || defaultTemplatePath;
  const text = await readTemplateFile(path);
  try {
    return `${JSON.stringify(renderTemplate(text, bootstrapVariables(config, context)), null, 2)}\n`;
  } catch (error) {
    if (error instanceof TemplateError) throw new AgentError('BAD_TEMPLATE', `${path}: ${error.message}`, { cause: error });
    throw error;
  }
}

async function readTemplateFile(path: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    throw badFile(path, `cannot read bootstrap template (${(error as NodeJS.ErrnoException).code ?? error})`, error);
  }
}
