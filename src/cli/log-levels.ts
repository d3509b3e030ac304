import { badFlag } from '../shared/errors.ts';
import type { Level } from 'pino';

const known: readonly string[] = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'];

/**
 * Parses `--log_output_level`: `info`, or per component as Istio spells it,
 * `default:info,xds:debug`.
 */
export function parseLogLevels(text: string): { default: Level; components: Record<string, Level> } {
  const result: { default: Level; components: Record<string, Level> } = { default: 'info', components: {} };
  for (const part of text.split(',').map((item) => item.trim()).filter(Boolean)) {
    const [scope, level] = part.includes(':') ? part.split(':', 2) : ['default', part];
    // Istio's spellings: `warning`, and `none`, which we take as "only fatal lines".
    const normalized = level === 'warning' ? 'warn' : level === 'none' ? 'fatal' : level!;
    if (!known.includes(normalized)) throw badFlag('--log_output_level', `unknown level "${level}" (use ${known.join(', ')})`);
    if (scope === 'default') result.default = normalized as Level;
    else result.components[scope!] = normalized as Level;
  }
  return result;
}
