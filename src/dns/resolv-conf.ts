import { existsSync } from 'node:fs';
import { isIP } from 'node:net';
import { readBoundedFileSync, readFailure } from '../shared/bounded-file.ts';

/** Istio reads this one instead when it exists (a VM or Docker without capture keeps the original there). */
export const istioResolvConf = '/var/lib/istio/resolv.conf';

export interface ResolvConf {
  path: string;
  /** Nameserver addresses, port 53. */
  servers: string[];
  search: string[];
  /** Why the file was there but not read (a FIFO, a device, too large): the agent then forwards nowhere. */
  unreadable?: string;
}

/** glibc reads 3 nameservers and 6 search domains: a resolv.conf of 64 KiB is not one. */
const resolvConfMaxBytes = 64 * 1024;

/** Reads the resolvers the agent forwards to and the search list; a missing file means none. */
export function readResolvConf(paths: readonly string[] = [istioResolvConf, '/etc/resolv.conf']): ResolvConf {
  const path = paths.find((candidate) => existsSync(candidate)) ?? paths[paths.length - 1]!;
  let text = '';
  try {
    // Bounded and non-blocking (a FIFO would hang the start), but followed: /etc/resolv.conf is often a symlink (systemd-resolved).
    text = readBoundedFileSync(path, { maxBytes: resolvConfMaxBytes }).toString('utf8');
  } catch (error) {
    // No resolv.conf: nothing to forward to, and every unknown name is SERVFAIL.
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') return { path, servers: [], search: [], unreadable: readFailure(error) };
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
