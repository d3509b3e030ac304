import { readFileSync } from 'node:fs';
import { isIPv4, isIPv6 } from 'node:net';
import { networkInterfaces } from 'node:os';
import type { Ipv6Mode } from './plan.ts';

/** One address of the pod, in the order the kernel lists them. */
export interface LocalAddress {
  address: string;
  family: 'IPv4' | 'IPv6';
  internal: boolean;
}

export function localAddresses(): LocalAddress[] {
  return Object.values(networkInterfaces()).flatMap((list) => (list ?? []).map(({ address, family, internal }) => ({ address, family, internal })));
}

/** Loopback and link-local addresses say nothing about the pod network. */
function isPodAddress({ address, family, internal }: LocalAddress): boolean {
  if (internal) return false;
  if (family === 'IPv4') return !address.startsWith('127.') && !address.startsWith('169.254.');
  const lower = address.toLowerCase();
  return lower !== '::1' && !/^fe[89ab]/.test(lower) && !lower.startsWith('ff');
}

/** The IPv6 decision and the addresses that made it, for the log line. */
export interface Ipv6Decision {
  mode: Ipv6Mode;
  /** The pod's first IPv6 address, when it has one. */
  address?: string;
  /** The pod's first address is IPv6 (Istio's HostIP): the validation then probes over ::1 and ::6. */
  firstIsIpv6: boolean;
}

/**
 * Istio (tools/common/config getLocalIP) writes IPv6 rules when the pod's
 * first address is IPv6, or with dual stack when it has any IPv6 address.
 * We follow that, and where Istio would leave an IPv6 address uncaptured
 * (dual-stack pod, no dual stack) we ask for the inbound reject instead.
 */
export function decideIpv6(addresses: readonly LocalAddress[], dualStack: boolean): Ipv6Decision {
  const pod = addresses.filter(isPodAddress);
  const firstV6 = pod.find((entry) => entry.family === 'IPv6');
  if (!firstV6) return { mode: 'none', firstIsIpv6: false };
  const firstIsIpv6 = pod[0]!.family === 'IPv6';
  return { mode: dualStack || firstIsIpv6 ? 'capture' : 'reject', address: firstV6.address, firstIsIpv6 };
}

/** The `nameserver` lines of resolv.conf, split by family (Istio's DNS servers). */
export function parseResolvConf(text: string): { v4: string[]; v6: string[] } {
  const servers = text.split('\n').map((line) => /^\s*nameserver\s+(\S+)/.exec(line)?.[1]).filter((server): server is string => server !== undefined);
  // A scoped address (fe80::1%eth0) cannot go in a rule; iptables has no zone.
  const plain = servers.map((server) => server.split('%')[0]!);
  return { v4: [...new Set(plain.filter((server) => isIPv4(server)))], v6: [...new Set(plain.filter((server) => isIPv6(server)))] };
}

/** A user's UID from /etc/passwd, as Go's user.Lookup finds it in a container. */
export function lookupUid(name: string, passwd = '/etc/passwd'): string | undefined {
  let text: string;
  try {
    text = readFileSync(passwd, 'utf8');
  } catch {
    return undefined;
  }
  const line = text.split('\n').find((entry) => entry.split(':')[0] === name);
  const uid = line?.split(':')[2];
  return uid !== undefined && /^\d+$/.test(uid) ? uid : undefined;
}
