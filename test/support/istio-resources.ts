import { edsCluster, endpoints, httpListener } from './resources.ts';

/**
 * xDS resources shaped as istiod sends them (see /work/shared/istiod/
 * reviews-sidecar.json): certificates are never inline or on disk, only
 * SDS references to `default` and `ROOTCA` through the `sds-grpc` cluster.
 */
const t = (name: string) => `type.googleapis.com/${name}`;

/** istiod's SdsSecretConfig: GRPC to sds-grpc, no initial fetch timeout (warm until served). */
export function sdsSecret(name: string): unknown {
  return {
    name,
    sds_config: {
      api_config_source: {
        api_type: 'GRPC',
        grpc_services: [{ envoy_grpc: { cluster_name: 'sds-grpc' } }],
        set_node_on_first_message_only: true,
        transport_api_version: 'V3',
      },
      initial_fetch_timeout: '0s',
      resource_api_version: 'V3',
    },
  };
}

/** The common TLS context of every mesh mTLS hop: identity `default`, trust `ROOTCA`, peers matched by SAN. */
function meshTlsContext(sanMatch: Record<string, string>, alpn: string[]): unknown {
  return {
    tls_params: { tls_minimum_protocol_version: 'TLSv1_2', tls_maximum_protocol_version: 'TLSv1_3' },
    alpn_protocols: alpn,
    tls_certificate_sds_secret_configs: [sdsSecret('default')],
    combined_validation_context: {
      default_validation_context: { match_subject_alt_names: [sanMatch] },
      validation_context_sds_secret_config: sdsSecret('ROOTCA'),
    },
  };
}

/** An inbound HTTP listener that terminates mesh mTLS (STRICT: a client certificate is required). */
export function inboundMtlsListener(options: { name: string; port: number; routeName: string; requireClientCertificate?: boolean }): unknown {
  const listener = httpListener(options.name, options.port, options.routeName) as { filter_chains: Record<string, unknown>[] };
  listener.filter_chains[0]!.transport_socket = {
    name: 'envoy.transport_sockets.tls',
    typed_config: {
      '@type': t('envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext'),
      common_tls_context: meshTlsContext({ prefix: 'spiffe://cluster.local/' }, ['h2', 'http/1.1']),
      require_client_certificate: options.requireClientCertificate ?? true,
    },
  };
  return listener;
}

/** An outbound cluster: mTLS to endpoints labelled tlsMode=istio (checking the server's SPIFFE id), plaintext otherwise. */
export function outboundMtlsCluster(name: string, serverIdentity: string): unknown {
  const cluster = edsCluster(name) as Record<string, unknown>;
  cluster.transport_socket_matches = [
    {
      name: 'tlsMode-istio',
      match: { tlsMode: 'istio' },
      transport_socket: {
        name: 'envoy.transport_sockets.tls',
        typed_config: {
          '@type': t('envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext'),
          common_tls_context: meshTlsContext({ exact: serverIdentity }, ['istio']),
          sni: name,
        },
      },
    },
    {
      name: 'tlsMode-disabled',
      match: {},
      transport_socket: {
        name: 'envoy.transport_sockets.raw_buffer',
        typed_config: { '@type': t('envoy.extensions.transport_sockets.raw_buffer.v3.RawBuffer') },
      },
    },
  ];
  return cluster;
}

/** Endpoints labelled as istiod labels mesh workloads: transport_socket_matches picks mTLS for them. */
export function meshEndpoints(clusterName: string, port: number): unknown {
  const assignment = endpoints(clusterName, port) as { endpoints: Array<{ lb_endpoints: Array<Record<string, unknown>> }> };
  assignment.endpoints[0]!.lb_endpoints[0]!.metadata = { filter_metadata: { 'envoy.transport_socket_match': { tlsMode: 'istio' } } };
  return assignment;
}

export const spiffeId = (serviceAccount: string) => `spiffe://cluster.local/ns/default/sa/${serviceAccount}`;
