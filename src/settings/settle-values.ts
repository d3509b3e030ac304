import { isAbsolute } from 'node:path';
import { splitList } from '../bootstrap/stats-matcher.ts';
import { badFlag } from '../shared/errors.ts';
import { parseHostPort } from '../shared/host-port.ts';
import type { HostPort } from '../shared/proxy-config.ts';

/*
 * The last step of a setting, once the sources settled on one value: an
 * empty value read as unset, and checks whose errors name the flag (they
 * run on a value from any source, so commander cannot make them).
 */

/** An empty value is unset: a fallback elsewhere decides. */
export const emptyIsUnset = (text: string | undefined) => text || undefined;

/** An empty list is unset: the pod annotations or ProxyConfig decide. */
export const optionalList = (text: string | undefined) => (text ? splitList(text) : undefined);

/** Envoy's bootstrap and the agent must agree on one path, whatever their working directories. */
export function absolutePath(path: string, flag: string): string {
  if (!isAbsolute(path)) throw badFlag(`--${flag}`, `${path} is not an absolute path`);
  return path;
}

export function hostPort(text: string, flag: string): HostPort {
  const parsed = parseHostPort(text);
  if (typeof parsed === 'string') throw badFlag(`--${flag}`, parsed);
  return parsed;
}

export const optionalHostPort = (text: string | undefined, flag: string) => (text ? hostPort(text, flag) : undefined);
