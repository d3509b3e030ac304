import { readFile } from 'node:fs/promises';
import { loadYaml } from '../settings/proxy-config-sources.ts';
import { AgentError } from '../shared/errors.ts';

/**
 * ISTIO_BOOTSTRAP_OVERRIDE: a YAML (or JSON) bootstrap fragment that Envoy
 * merges over the rendered bootstrap (`--config-yaml`, which takes JSON too).
 * `$(HOST_IP)` stands for the node's IP, which tracers (Datadog, Zipkin
 * agents on the node) need; an IPv6 one gets brackets to be a host:port host.
 * Returns the fragment as one line of JSON.
 */
export async function readBootstrapOverride(path: string, hostIp: string | undefined): Promise<string> {
  const bad = (reason: string, cause?: unknown) =>
    new AgentError('BAD_FILE', `--bootstrapOverride (env ISTIO_BOOTSTRAP_OVERRIDE) ${path}: ${reason}`, { cause });
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw bad(`cannot read (${(error as NodeJS.ErrnoException).code ?? error})`, error);
  }
  let value: unknown;
  try {
    value = (await loadYaml()).parse(substituteHostIp(text, hostIp), { maxAliasCount: 100 });
  } catch (error) {
    throw bad(`is not YAML or JSON: ${(error as Error).message.split('\n')[0]}`, error);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw bad('must be a bootstrap object (a YAML mapping)');
  return JSON.stringify(value);
}

/** `$(HOST_IP)`, or `[$(HOST_IP)]` written for an IPv6 host, becomes the IP (bracketed when IPv6). */
export function substituteHostIp(text: string, hostIp: string | undefined): string {
  const ip = hostIp ?? '';
  const host = ip.includes(':') ? `[${ip}]` : ip;
  return text.replaceAll('[$(HOST_IP)]', host).replaceAll('$(HOST_IP)', host);
}
