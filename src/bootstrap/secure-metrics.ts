import { exactPathListener } from './exact-path-listener.ts';

/**
 * Istio's mTLS metrics listeners (ENVOY_SECURE_METRICS_PORT and
 * ENVOY_SECURE_MERGED_METRICS_PORT): TLS only, the workload's certificate
 * (`default`) and a client certificate checked against the mesh's root
 * (`ROOTCA`), both over SDS. As the other pod-facing listeners, each passes
 * exact GET paths only: Envoy's stats from admin, or the status server's
 * merged metrics.
 */
export interface SecureMetricsPorts {
  /** Envoy's own stats; 0: none. */
  envoy: number;
  /** The status port's merged metrics; 0: none. */
  merged: number;
}

export function secureMetricsListeners(ports: SecureMetricsPorts, wildcard: string): unknown[] {
  const envoy = { port: ports.envoy, wildcard, statPrefix: 'secure_stats', paths: ['/stats/prometheus'], cluster: 'prometheus_stats' };
  const merged = { port: ports.merged, wildcard, statPrefix: 'secure_merged_stats', paths: ['/stats/prometheus', '/metrics'], cluster: mergedCluster };
  return [envoy, merged].filter((listener) => listener.port !== 0).map(secureListener);
}

/** The cluster to the status server's TCP port, whose /stats/prometheus is the merged answer (and public there anyway). */
const mergedCluster = 'agent_merged_metrics';

export function mergedMetricsCluster(statusPort: number, localhost: string): unknown {
  return {
    name: mergedCluster,
    // The `;` ends the cluster's name for the cluster_name stats tag (stats-tags.ts).
    alt_stat_name: `${mergedCluster};`,
    type: 'STATIC',
    connect_timeout: '0.250s',
    lb_policy: 'ROUND_ROBIN',
    load_assignment: {
      cluster_name: mergedCluster,
      endpoints: [{ lb_endpoints: [{ endpoint: { address: { socket_address: { address: localhost, port_value: statusPort } } } }] }],
    },
  };
}

interface SecureListenerOptions {
  port: number;
  wildcard: string;
  statPrefix: string;
  paths: readonly string[];
  cluster: string;
}

function secureListener(options: SecureListenerOptions): unknown {
  const plain = exactPathListener({
    name: `secure_metrics_${options.port}`, host: options.wildcard, port: options.port, statPrefix: options.statPrefix,
    path: options.paths[0]!, alsoPaths: options.paths.slice(1), cluster: options.cluster,
  }) as { filter_chains: Record<string, unknown>[] };
  return {
    ...plain,
    listener_filters: [{
      name: 'envoy.filters.listener.tls_inspector',
      typed_config: { '@type': 'type.googleapis.com/envoy.extensions.filters.listener.tls_inspector.v3.TlsInspector' },
    }],
    filter_chains: plain.filter_chains.map((chain) => ({ filter_chain_match: { transport_protocol: 'tls' }, transport_socket: mutualTls, ...chain })),
  };
}

const sdsConfig = {
  api_config_source: {
    api_type: 'GRPC', grpc_services: [{ envoy_grpc: { cluster_name: 'sds-grpc' } }], set_node_on_first_message_only: true, transport_api_version: 'V3',
  },
  resource_api_version: 'V3',
};

const mutualTls = {
  name: 'envoy.transport_sockets.tls',
  typed_config: {
    '@type': 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext',
    require_client_certificate: true,
    common_tls_context: {
      tls_certificate_sds_secret_configs: [{ name: 'default', sds_config: sdsConfig }],
      combined_validation_context: { default_validation_context: {}, validation_context_sds_secret_config: { name: 'ROOTCA', sds_config: sdsConfig } },
    },
  },
};
