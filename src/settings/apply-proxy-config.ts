import { AgentError } from '../shared/errors.ts';
import type { MergedProxyConfig } from './proxy-config-sources.ts';
import { attributeOf, type FlagSetting } from './setting.ts';

/** Where commander says a flag's value came from: 'cli', 'env', 'default', or undefined when unset. */
export type ValueSource = (flag: string) => string | undefined;

export interface ApplyProxyConfigOptions {
  specs: readonly FlagSetting[];
  /** The parsed flag values, updated in place. */
  flags: Record<string, unknown>;
  sourceOf: ValueSource;
  merged: MergedProxyConfig;
}

/**
 * Puts the merged ProxyConfig under the flags: a ProxyConfig field sets its
 * flag unless the command line or the flag's own env var already did. Each
 * value goes through the flag's own parser, so it is checked exactly as the
 * flag would be; a value it refuses names the source and the field.
 * Returns the fields that took effect.
 */
export function applyProxyConfig(options: ApplyProxyConfigOptions): string[] {
  const applied: string[] = [];
  for (const spec of options.specs) {
    if (!spec.proxyConfig) continue;
    const value = lookup(options.merged.value, spec.proxyConfig);
    const source = options.sourceOf(attributeOf(spec));
    if (value === undefined || source === 'cli' || source === 'env') continue;
    options.flags[attributeOf(spec)] = parseField(spec, value, options.merged.origin[spec.proxyConfig.split('.')[0]!] ?? 'ProxyConfig');
    applied.push(spec.proxyConfig);
  }
  return applied;
}

/** A dotted path into nested ProxyConfig messages, e.g. proxyStatsMatcher.inclusionPrefixes. */
function lookup(value: Record<string, unknown>, path: string): unknown {
  let current: unknown = value;
  for (const part of path.split('.')) {
    if (typeof current !== 'object' || current === null || Array.isArray(current)) return undefined;
    current = (current as Record<string, unknown>)[part] ?? undefined;
  }
  return current ?? undefined;
}

function parseField(spec: FlagSetting, value: unknown, origin: string): unknown {
  const fail = (reason: string) => new AgentError('BAD_ENV', `${origin}: field ${spec.proxyConfig}: ${reason}`);
  const text = asText(value);
  if (text === undefined) throw fail(`${JSON.stringify(value)} is not a value for --${spec.flag}`);
  if (spec.choices && !spec.choices.includes(text)) throw fail(`"${text}" is not one of ${spec.choices.join(', ')}`);
  try {
    return spec.parse ? spec.parse(text) : text;
  } catch (error) {
    throw fail(`"${text}": ${(error as Error).message}`);
  }
}

/** Scalars as a flag would take them; lists comma-separated, as the list flags take them. */
function asText(value: unknown): string | undefined {
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (Array.isArray(value) && value.every((entry) => typeof entry === 'string')) return value.join(',');
  return undefined;
}
