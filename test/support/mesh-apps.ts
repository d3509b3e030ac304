import { createServer, type Server } from 'node:http';
import { inboundMtlsListener, meshEndpoints, outboundMtlsCluster, spiffeId } from './istio-resources.ts';
import { edsCluster, endpoints, httpListener, routeConfig } from './resources.ts';

/** An app that answers with who called it, as its sidecar's Envoy forwards the client certificate. */
export interface EchoApp {
  port: number;
  close(): Promise<void>;
}

export async function startEchoApp(name: string): Promise<EchoApp> {
  const server: Server = createServer((request, response) => {
    response.setHeader('content-type', 'application/json');
    response.end(JSON.stringify({ app: name, xfcc: request.headers['x-forwarded-client-cert'] ?? null }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

/** The inbound side of a sidecar: STRICT mTLS on `port`, then plaintext to the app; the caller's cert is forwarded. */
export function sidecarInbound(options: { port: number; appPort: number; name: string }): unknown[] {
  const listener = inboundMtlsListener({ name: `inbound_${options.name}`, port: options.port, routeName: `inbound_${options.name}` }) as {
    filter_chains: Array<{ filters: Array<{ typed_config: Record<string, unknown> }> }>;
  };
  // The app learns the caller's identity and certificate: proof the hop was mutual TLS.
  Object.assign(listener.filter_chains[0]!.filters[0]!.typed_config, {
    forward_client_cert_details: 'SANITIZE_SET',
    set_current_client_cert_details: { uri: true, cert: true },
  });
  const cluster = `inbound|${options.appPort}||`;
  return [listener, routeConfig(`inbound_${options.name}`, [{ prefix: '/', cluster }]), edsCluster(cluster), endpoints(cluster, options.appPort)];
}

/** The outbound side (sidecar or router): a plaintext listener whose route goes over mesh mTLS to `target`. */
export function outboundTo(options: { listenerPort: number; name: string; target: { port: number; serviceAccount: string } }): unknown[] {
  const cluster = `outbound|80||${options.target.serviceAccount}.default.svc.cluster.local`;
  return [
    httpListener(`outbound_${options.name}`, options.listenerPort, `outbound_${options.name}`),
    routeConfig(`outbound_${options.name}`, [{ prefix: '/', cluster }]),
    withFreshConnections(outboundMtlsCluster(cluster, spiffeId(options.target.serviceAccount))),
    meshEndpoints(cluster, options.target.port),
  ];
}

/**
 * One request per upstream connection, so every request is a new mTLS
 * handshake: a rotated identity shows on the next request. (Pooled
 * connections keep the certificate they were made with, in Istio too.)
 */
function withFreshConnections(cluster: unknown): unknown {
  return {
    ...(cluster as Record<string, unknown>),
    typed_extension_protocol_options: {
      'envoy.extensions.upstreams.http.v3.HttpProtocolOptions': {
        '@type': 'type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions',
        common_http_protocol_options: { max_requests_per_connection: 1 },
        explicit_http_config: { http_protocol_options: {} },
      },
    },
  };
}

/** The identity in an x-forwarded-client-cert value, and the serial of the certificate in it. */
export function parseXfcc(value: string | null): { uri?: string; cert?: string } {
  if (!value) return {};
  const uri = /URI=([^;,]+)/.exec(value)?.[1];
  const cert = /Cert="([^"]+)"/.exec(value)?.[1];
  return { uri, cert: cert ? decodeURIComponent(cert) : undefined };
}
