import { isIP } from 'node:net';

/**
 * Where the bootstrap's pod-facing listeners bind, from the pod's IPs, as
 * Istio's bootstrap decides (pkg/bootstrap/config.go): IPv4 only, IPv6 only
 * (`::`, no IPv4 mapping: the kubelet probes the pod's IPv6 address), or,
 * with ISTIO_DUAL_STACK, the first IP's family plus the other one as an
 * additional address. A dual-stack pod without ISTIO_DUAL_STACK stays IPv4.
 */
export interface ListenerHosts {
  wildcard: string;
  localhost: string;
  /** Dual stack only: the other family's wildcard and loopback. */
  additional?: { wildcard: string; localhost: string };
  /** Envoy's dns_lookup_family for clusters that resolve names. */
  dnsLookupFamily: 'V4_ONLY' | 'V6_ONLY' | 'ALL';
}

const v4 = { wildcard: '0.0.0.0', localhost: '127.0.0.1' };
const v6 = { wildcard: '::', localhost: '::1' };

export function listenerHosts(instanceIps: readonly string[], dualStack: boolean): ListenerHosts {
  // As Istio's AllIPv4/AllIPv6: what does not parse is skipped, so no IPs at all counts as IPv4.
  const families = instanceIps.map((ip) => isIP(ip)).filter((family) => family !== 0);
  if (families.every((family) => family === 4)) return { ...v4, dnsLookupFamily: 'V4_ONLY' };
  if (families.every((family) => family === 6)) return { ...v6, dnsLookupFamily: 'V6_ONLY' };
  if (!dualStack) return { ...v4, dnsLookupFamily: 'V4_ONLY' };
  // The first IP decides, as istiod takes it as the pod IP; a link-local IPv6 one counts as IPv4 (Istio's CheckIPFamilyTypeForFirstIPs).
  const first = instanceIps[0] ?? '';
  const v6First = isIP(first) === 6 && !/^fe[89ab]/i.test(first);
  return v6First ? { ...v6, additional: v4, dnsLookupFamily: 'ALL' } : { ...v4, additional: v6, dnsLookupFamily: 'ALL' };
}

/** Envoy's `additional_addresses` for a listener on `port`, or null (the template drops the key). */
export function additionalAddresses(host: string | undefined, port: number | string): unknown[] | null {
  return host === undefined ? null : [{ address: { socket_address: { address: host, port_value: port } } }];
}
