import { existsSync, readFileSync } from 'node:fs';
import { isIP } from 'node:net';

/** Istio reads this one instead when it exists (a VM or Docker without capture keeps the original there). */
export const istioResolvConf = '/var/lib/istio/resolv.conf';

export interface ResolvConf {
  path: string;
  /** Nameserver addresses, port 53. */
  servers: string[];
  search: string[];
}

/** Reads the resolvers the agent forwards to and the search list; a missing file means none. */
export function readResolvConf(paths: readonly string[] = [istioResolvConf, '/etc/resolv.conf']): ResolvConf {
  const path = paths.find((candidate) => existsSync(candidate)) ?? paths[paths.length - 1]!;
  let text = '';
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    // No resolv.conf: nothing to forward to, and every unknown name is SERVFAIL.
  }
  return { path, ...parseResolvConf(text) };
}

/** The `nameserver` lines (addresses only, zone ids dropped) and the last `search` (or `domain`) line. */
export function parseResolvConf(text: string): { servers: string[]; search: string[] } {
  const servers: string[] = [];
  let search: string[] = [];
  for (const line of text.split('\n')) {
    const [keyword, ...values] = line.replace(/[#;].*/, '').trim().split(/\s+/);
    if (keyword === 'nameserver' && values[0]) {
      const address = values[0].split('%')[0]!;
      if (isIP(address)) servers.push(address);
    } else if (keyword === 'search' || keyword === 'domain') {
      search = values.filter(Boolean);
    }
  }
  return { servers, search };
}
