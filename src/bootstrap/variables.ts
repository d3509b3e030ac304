import { isIP } from 'node:net';
import { join } from 'node:path';
import type { HostPort, ProxyConfig } from '../shared/proxy-config.ts';
import type { TemplateVariables } from './template.ts';

/** What the bootstrap needs beyond the flags. */
export interface BootstrapContext {
  nodeId: string;
  metadata: Record<string, unknown>;
  /** Where Envoy reaches the discovery server: a TCP address or the agent's XDS socket. */
  xdsTarget: { kind: 'tcp'; address: HostPort } | { kind: 'pipe'; path: string };
}

/** The variables the default template (and any --templateFile) can use. */
export function bootstrapVariables(config: ProxyConfig, context: BootstrapContext): TemplateVariables {
  return {
    node_id: context.nodeId,
    cluster: config.serviceCluster,
    metadata: context.metadata,
    admin_port: config.proxyAdminPort,
    ads_api_type: config.deltaXds ? 'DELTA_GRPC' : 'GRPC',
    connect_timeout: protoDuration(config.connectTimeoutMs),
    ...xdsVariables(config, context),
    stats_sinks: config.statsdUdpAddress ? [statsdSink(config.statsdUdpAddress)] : [],
    extra_clusters: config.zipkinAddress ? [zipkinCluster(config.zipkinAddress, config.connectTimeoutMs)] : [],
    extra_listeners: [],
    tracing: config.zipkinAddress ? zipkinTracing() : null,
    prometheus_port: config.prometheusPort,
    status_port: config.statusPort,
    config_path: config.configPath,
    cert_dir: config.certDir,
  };
}

function xdsVariables(config: ProxyConfig, context: BootstrapContext): TemplateVariables {
  const target = context.xdsTarget;
  if (target.kind === 'pipe') {
    return { xds_cluster_type: 'STATIC', xds_address: { pipe: { path: target.path } }, xds_transport_socket: null };
  }
  return {
    xds_cluster_type: isIP(target.address.host) ? 'STATIC' : 'STRICT_DNS',
    xds_address: socketAddress(target.address),
    xds_transport_socket: config.controlPlaneAuthPolicy === 'MUTUAL_TLS' ? mutualTls(config.certDir, target.address.host) : null,
  };
}

/** Envoy speaks TLS itself when it talks to the discovery server directly. */
function mutualTls(certDir: string, serverName: string): unknown {
  return {
    name: 'envoy.transport_sockets.tls',
    typed_config: {
      '@type': 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext',
      sni: serverName,
      common_tls_context: {
        alpn_protocols: ['h2'],
        tls_certificates: [
          {
            certificate_chain: { filename: join(certDir, 'cert-chain.pem') },
            private_key: { filename: join(certDir, 'key.pem') },
          },
        ],
        validation_context: { trusted_ca: { filename: join(certDir, 'root-cert.pem') } },
      },
    },
  };
}

function socketAddress({ host, port }: HostPort, protocol?: 'UDP'): unknown {
  return { socket_address: { address: host, port_value: port, ...(protocol ? { protocol } : {}) } };
}

function statsdSink(address: HostPort): unknown {
  return {
    name: 'envoy.stat_sinks.statsd',
    typed_config: {
      '@type': 'type.googleapis.com/envoy.config.metrics.v3.StatsdSink',
      address: socketAddress(address, 'UDP'),
    },
  };
}

function zipkinCluster(address: HostPort, connectTimeoutMs: number): unknown {
  return {
    name: 'zipkin',
    type: isIP(address.host) ? 'STATIC' : 'STRICT_DNS',
    connect_timeout: protoDuration(connectTimeoutMs),
    lb_policy: 'ROUND_ROBIN',
    load_assignment: {
      cluster_name: 'zipkin',
      endpoints: [{ lb_endpoints: [{ endpoint: { address: socketAddress(address) } }] }],
    },
  };
}

function zipkinTracing(): unknown {
  return {
    http: {
      name: 'envoy.tracers.zipkin',
      typed_config: {
        '@type': 'type.googleapis.com/envoy.config.trace.v3.ZipkinConfig',
        collector_cluster: 'zipkin',
        collector_endpoint: '/api/v2/spans',
        collector_endpoint_version: 'HTTP_JSON',
        trace_id_128bit: true,
        shared_span_context: false,
      },
    },
  };
}

/** Protobuf's JSON form of a Duration: seconds with up to 9 decimals. */
export function protoDuration(ms: number): string {
  return `${(ms / 1000).toFixed(3).replace(/\.?0+$/, '')}s`;
}
