import { resolve } from 'node:path';
import { splitList } from '../shared/list.ts';
import { badFlag } from '../shared/errors.ts';
import { parseHostPort, type HostPort } from '../shared/host-port.ts';

/*
 * The last step of a setting, once the sources settled on one value: an
 * empty value read as unset, and checks whose errors name the flag (they
 * run on a value from any source, so commander cannot make them).
 */

/** An empty value is unset: a fallback elsewhere decides. */
export const emptyIsUnset = (text: string | undefined) => text || undefined;

/** An empty list is unset: the pod annotations or ProxyConfig decide. */
export const optionalList = (text: string | undefined) => (text ? splitList(text) : undefined);

/**
 * A path as Istio's agent reads it, against the working directory (its
 * defaults are ./etc/istio/proxy, ./var/run/secrets/...; in a pod that is /),
 * made absolute once at start: Envoy's bootstrap and the agent then agree on
 * one path whatever their working directories.
 */
export const workingDirPath = (path: string) => resolve(path);

export function hostPort(text: string, flag: string): HostPort {
  const parsed = parseHostPort(text);
  if (typeof parsed === 'string') throw badFlag(`--${flag}`, parsed);
  return parsed;
}

export const optionalHostPort = (text: string | undefined, flag: string) => (text ? hostPort(text, flag) : undefined);
