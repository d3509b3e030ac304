import { BlockList, isIP } from 'node:net';

/**
 * Addresses a Wasm fetch must never connect to, whatever name led there:
 * link-local (which holds most clouds' instance metadata, 169.254.169.254)
 * and the metadata addresses outside it. Private and loopback stay allowed:
 * in-cluster registries live there.
 */
const blocked = new BlockList();
blocked.addSubnet('169.254.0.0', 16, 'ipv4');
blocked.addSubnet('fe80::', 10, 'ipv6');
blocked.addAddress('100.100.100.200', 'ipv4'); // Alibaba Cloud metadata
blocked.addAddress('fd00:ec2::254', 'ipv6'); // AWS metadata over IPv6

/** Why a connection to `address` is refused, or undefined when it may go ahead; `operator` adds BLOCKED_CIDRS_IN_WASM_FETCH. */
export function refusedAddress(address: string, operator?: BlockList): string | undefined {
  const family = isIP(address);
  if (family === 0) return undefined;
  // ::ffff:169.254.169.254 reaches the IPv4 address; judge it as one.
  const mapped = family === 6 ? /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1] : undefined;
  const [ip, type] = mapped ? [mapped, 'ipv4' as const] : [address, family === 4 ? ('ipv4' as const) : ('ipv6' as const)];
  if (operator && reached(ip, type).some(([one, kind]) => operator.check(one, kind))) return `connection to ${address} refused: in BLOCKED_CIDRS_IN_WASM_FETCH`;
  if (!blocked.check(ip, type)) return undefined;
  return `connection to ${address} refused: link-local and cloud metadata addresses are not fetched from`;
}

/**
 * The addresses a connection to `ip` reaches: itself, and for the unspecified
 * address (0.0.0.0, ::), which Linux connects to this host over loopback,
 * the loopback addresses too, so blocking 127.0.0.0/8 or ::1 blocks them.
 */
function reached(ip: string, type: 'ipv4' | 'ipv6'): [string, 'ipv4' | 'ipv6'][] {
  const unspecified = type === 'ipv4' ? ip === '0.0.0.0' : /^[0:]+$/.test(ip);
  return unspecified ? [[ip, type], ['127.0.0.1', 'ipv4'], ['::1', 'ipv6']] : [[ip, type]];
}

/** Token servers named by a registry's challenge: none on private, loopback or link-local addresses, as Istio refuses them. */
export function refusedRealm(realm: string): string | undefined {
  let url: URL;
  try {
    url = new URL(realm);
  } catch {
    return `token realm ${JSON.stringify(realm)} is not a URL`;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return `token realm scheme ${url.protocol} is not allowed`;
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (host === 'localhost' || host === 'metadata.google.internal') return `token realm ${host} is not allowed`;
  const local = isIP(host) !== 0 && reached(host, isIP(host) === 4 ? 'ipv4' : 'ipv6').some(([ip, type]) => privateOrLocal.check(ip, type));
  if (local || (isIP(host) && refusedAddress(host))) return `token realm ${host} is a private, loopback or link-local address`;
  return undefined;
}

const privateOrLocal = new BlockList();
for (const [net, bits] of [['10.0.0.0', 8], ['172.16.0.0', 12], ['192.168.0.0', 16], ['127.0.0.0', 8]] as const) privateOrLocal.addSubnet(net, bits, 'ipv4');
privateOrLocal.addSubnet('fc00::', 7, 'ipv6');
privateOrLocal.addAddress('::1', 'ipv6');
