import { badEnv } from '../shared/errors.ts';

const metaPrefix = 'ISTIO_META_';
const metaJsonPrefix = 'ISTIO_METAJSON_';

export type NodeMetadata = Record<string, unknown>;

/**
 * Node metadata from the environment: `ISTIO_META_<NAME>=v` becomes
 * `NAME: "v"`, `ISTIO_METAJSON_<NAME>` is parsed as JSON and merged into NAME.
 */
export function metadataFromEnv(env: Readonly<Record<string, string | undefined>>): NodeMetadata {
  const metadata: NodeMetadata = {};
  const names = Object.keys(env).sort();
  for (const name of names) {
    if (name.startsWith(metaPrefix) && name.length > metaPrefix.length) {
      metadata[name.slice(metaPrefix.length)] = env[name] ?? '';
    }
  }
  for (const name of names) {
    if (name.startsWith(metaJsonPrefix) && name.length > metaJsonPrefix.length) {
      const key = name.slice(metaJsonPrefix.length);
      metadata[key] = merge(metadata[key], parseJson(name, env[name] ?? ''));
    }
  }
  return metadata;
}

function parseJson(name: string, text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw badEnv(name, `is not valid JSON (${(error as Error).message})`, error);
  }
}

function merge(existing: unknown, incoming: unknown): unknown {
  if (isObject(existing) && isObject(incoming)) return { ...existing, ...incoming };
  return incoming;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
