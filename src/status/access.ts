/**
 * Who may reach which status endpoint, decided from what the socket says,
 * never from what the request says.
 */

/**
 * The path of a request target, or undefined when it is not spelled the one
 * way our routes are: `/` then segments of letters, digits, `-` and `_`.
 * Dot segments, percent escapes, doubled slashes, backslashes, `;` and
 * absolute-form targets are refused rather than resolved, so no spelling of
 * one path can reach another. The query is not part of the path.
 */
export function canonicalPath(target: string): string | undefined {
  const end = target.indexOf('?');
  const path = end === -1 ? target : target.slice(0, end);
  return /^(\/[A-Za-z0-9_-]+)+$/.test(path) ? path : undefined;
}

/**
 * A peer on this host's own loopback: 127.0.0.1 or ::1 (also IPv4-mapped),
 * not all of 127.0.0.0/8. Istio's inbound passthrough connects to the app
 * from 127.0.0.6 on behalf of pod-network clients, so other 127/8 sources
 * may be the network relayed by Envoy. A Unix socket peer has no address and
 * is not loopback: the status server keeps its socket for Envoy's hop.
 */
export function isLoopbackPeer(address: string | undefined): boolean {
  return address === '127.0.0.1' || address === '::1' || address === '::ffff:127.0.0.1';
}
