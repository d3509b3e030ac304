import { isIP } from 'node:net';

/** How every app probe reaches the app: where to, from where, and over what. */
export interface ProbeNetwork {
  /** The pod IP, as the kubelet probes; loopback only with REWRITE_PROBE_LEGACY_LOCALHOST_DESTINATION. */
  destination: string;
  /**
   * The source of every probe connection: 127.0.0.6 (::6 for an IPv6 pod).
   * Istio's capture rules let this source through to the app without
   * sending it to Envoy's inbound listener, which would demand mTLS.
   */
  localAddress: string;
  /** ISTIO_ENABLE_HTTP2_PROBING: HTTPS probes offer h2 by ALPN, as the kubelet's. */
  http2: boolean;
  /** ENABLE_PROBE_KEEPALIVE_CONNECTIONS: reuse a probe's connection instead of one per probe (the kubelet's way). */
  keepAlive: boolean;
}

export interface ProbeNetworkInput {
  /** INSTANCE_IP, else the proxy's IP; undefined when neither is known. */
  podIp?: string;
  legacyLocalhost: boolean;
  http2: boolean;
  keepAlive: boolean;
}

/**
 * Istio's choice: an IPv6 pod IP (not link-local) makes loopback and the
 * source IPv6; no pod IP at all probes loopback, as Istio's empty host does.
 */
export function probeNetwork(input: ProbeNetworkInput): ProbeNetwork {
  const v6 = input.podIp !== undefined && isIP(input.podIp) === 6 && !/^fe[89ab]/i.test(input.podIp);
  const loopback = v6 ? '::1' : '127.0.0.1';
  const destination = input.legacyLocalhost || !input.podIp ? loopback : input.podIp;
  return { destination, localAddress: v6 ? '::6' : '127.0.0.6', http2: input.http2, keepAlive: input.keepAlive };
}
