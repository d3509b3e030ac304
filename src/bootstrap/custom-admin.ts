import { extname } from 'node:path';
import { loadYaml } from '../settings/proxy-config-sources.ts';
import { badFlag } from '../shared/errors.ts';

/** Where the agent's admin client reaches an admin listener on each host a bootstrap may name (`::` is IPv6 only in Envoy). */
const reachableHosts: Readonly<Record<string, string>> = {
  '127.0.0.1': '127.0.0.1', '0.0.0.0': '127.0.0.1', localhost: '127.0.0.1', '::1': '::1', '::': '::1',
};

export interface CustomAdminInput {
  /** --customConfigFile, for the format (by extension) and for error lines. */
  path: string;
  text: string;
  /** --proxyAdminPort as resolved, and whether a flag, env or ProxyConfig set it (else it is the default). */
  flagPort: number;
  flagGiven: boolean;
}

/**
 * The admin port the agent watches for a custom bootstrap: the file's own.
 * Envoy listens where the file says, so a default --proxyAdminPort that
 * differs would leave the agent polling a port nobody serves (never LIVE,
 * no rotation, nothing logged). A given one that differs is a contradiction
 * the user has to resolve. Undefined when the file has no admin on a TCP port;
 * `host` is the loopback the agent calls it on.
 */
export async function customAdmin(input: CustomAdminInput): Promise<{ port: number; host: string } | undefined> {
  const address = await adminAddress(input.path, input.text);
  const where = `--customConfigFile ${input.path}`;
  // No admin on a TCP port: nothing to take; Envoy's own verdict on the file comes at validation.
  if (address === undefined) return undefined;
  const host = Object.hasOwn(reachableHosts, address.host) ? reachableHosts[address.host]! : undefined;
  if (host === undefined)
    throw badFlag(
      '--customConfigFile',
      `${input.path} puts admin on ${address.host}:${address.port}: the agent reaches admin on loopback only (use 127.0.0.1 or ::1)`,
    );
  if (input.flagGiven && address.port !== input.flagPort) {
    throw badFlag(
      '--proxyAdminPort',
      `${input.flagPort} disagrees with ${where}, whose admin listens on port ${address.port}: leave --proxyAdminPort out, or give the same port`,
    );
  }
  return { port: address.port, host };
}

/** admin.address.socket_address of the bootstrap, in Envoy's three text formats. */
async function adminAddress(path: string, text: string): Promise<{ host: string; port: number } | undefined> {
  if (/^\.pb_text$/i.test(extname(path))) return textProtoAdmin(text);
  let parsed: unknown;
  try {
    // YAML is a superset of JSON: one parser reads both.
    parsed = (await loadYaml()).parse(text, { maxAliasCount: 100 });
  } catch (error) {
    throw badFlag(
      '--customConfigFile',
      `${path} does not parse as ${/^\.ya?ml$/i.test(extname(path)) ? 'YAML' : 'JSON'}: ${(error as Error).message.split('\n')[0]}`,
      error,
    );
  }
  const socket = dig(parsed, ['admin', 'address', 'socket_address']) ?? dig(parsed, ['admin', 'address', 'socketAddress']);
  const port = Number(dig(socket, ['port_value']) ?? dig(socket, ['portValue']));
  if (!Number.isInteger(port) || port <= 0) return undefined;
  return { host: String(dig(socket, ['address']) ?? ''), port };
}

function dig(value: unknown, path: readonly string[]): unknown {
  let current = value;
  for (const key of path) {
    if (typeof current !== 'object' || current === null) return undefined;
    current = (current as Record<string, unknown>)[key];
  }
  return current;
}

/** Text proto: the admin block's socket_address, read with a pattern (no proto parser for one field). */
function textProtoAdmin(text: string): { host: string; port: number } | undefined {
  const block = /\badmin\s*:?\s*\{[\s\S]*?socket_address\s*:?\s*\{([^}]*)\}/.exec(text)?.[1];
  const port = Number(/port_value\s*:\s*(\d+)/.exec(block ?? '')?.[1]);
  if (!block || !Number.isInteger(port) || port <= 0) return undefined;
  return { host: /address\s*:\s*"([^"]*)"/.exec(block)?.[1] ?? '', port };
}
