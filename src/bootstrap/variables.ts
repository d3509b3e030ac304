import { isIP } from 'node:net';
import { badEnv } from '../shared/errors.ts';
import type { HostPort } from '../shared/host-port.ts';
import { envoyLocality, localityFromLabels } from '../role/locality.ts';
import type { AgentConfig } from '../settings/proxy-settings.ts';
import { additionalAddresses, listenerHosts, type ListenerHosts } from './listener-hosts.ts';
import { agentStatusCluster, readinessListener } from './readiness.ts';
import { applicationLogConfig, layeredRuntime, overloadManager } from './runtime.ts';
import { metadataDiscoveryExtensions } from './metadata-discovery.ts';
import { mergedMetricsCluster, secureMetricsListeners, type SecureMetricsPorts } from './secure-metrics.ts';
import { clusterManager, localCluster, selfDiscoveryEnabled } from './self-discovery.ts';
import { statsAnnotationVariables } from './stats-annotations.ts';
import { statsCompressionFilters } from './stats-compression.ts';
import { splitList } from '../shared/list.ts';
import { statsMatcher } from './stats-matcher.ts';
import { extraStatTagsAnnotation, statsTags } from './stats-tags.ts';
import type { TemplateVariables } from './template.ts';

/** What the bootstrap needs beyond the flags. */
export interface BootstrapContext {
  nodeId: string;
  metadata: Record<string, unknown>;
  /** The agent's XDS socket: Envoy reaches the discovery server through the relay. */
  xdsSocketPath: string;
  /** The status server's socket for Envoy's readiness hop (readiness only). */
  readinessSocketPath: string;
  /** --log_as_json: Envoy's own log lines as JSON too (Istio's application_log_config). */
  logAsJson?: boolean;
  /** ISTIO_DUAL_STACK: a pod with IPv4 and IPv6 addresses listens on both. */
  dualStack?: boolean;
  /** METRICS_LOCALHOST_ACCESS_ONLY: Envoy's Prometheus listener on loopback, out of the pod network's reach. */
  metricsLocalhostOnly?: boolean;
  /** The cloud's locality (CLOUD_PLATFORM), `region/zone`: node.locality when no pod label gives one. */
  platformLocality?: string;
  /** ENVOY_SECURE_METRICS_PORT, ENVOY_SECURE_MERGED_METRICS_PORT: Istio's mTLS metrics listeners. */
  secureMetrics?: SecureMetricsPorts;
}

/** The variables the default template (and any --templateFile) can use. */
export function bootstrapVariables(config: AgentConfig, context: BootstrapContext): TemplateVariables {
  const hosts = listenerHosts(instanceIps(context), context.dualStack === true);
  return {
    ...prometheusHosts(config, hosts, context.metricsLocalhostOnly === true),
    node_id: context.nodeId,
    cluster: config.serviceCluster,
    metadata: context.metadata,
    locality: envoyLocality(localityFromLabels(context.metadata.LABELS as Record<string, string> | undefined) ?? context.platformLocality),
    admin_host: hosts.localhost, // ::1 in an IPv6-only pod, as Istio's `localhost`; the agent calls admin there too
    admin_port: config.proxyAdminPort,
    application_log_config: applicationLogConfig(context.logAsJson === true),
    layered_runtime: layeredRuntime(config.bootstrapFields?.runtimeValues),
    overload_manager: overloadManager(config.bootstrapFields?.globalDownstreamMaxConnections),
    stats_compression_filters: statsCompressionFilters(config.bootstrapFields?.statsCompression !== false),
    ads_api_type: config.deltaXds ? 'DELTA_GRPC' : 'GRPC',
    metadata_discovery_extensions: metadataDiscoveryExtensions(config, context.metadata),
    connect_timeout: protoDuration(config.connectTimeoutMs),
    xds_cluster_type: 'STATIC', // the hop is a local socket: plain, no DNS; TLS to the discovery server is the relay's job
    xds_address: { pipe: { path: context.xdsSocketPath } },
    stats_sinks: config.statsdUdpAddress ? [statsdSink(config.statsdUdpAddress)] : [],
    extra_clusters: [
      ...(config.zipkinAddress ? [zipkinCluster(config.zipkinAddress, config.connectTimeoutMs, hosts)] : []),
      ...readinessClusters(config, context),
      ...(selfDiscoveryEnabled(context.metadata) ? [localCluster()] : []),
      ...(context.secureMetrics?.merged ? [mergedMetricsCluster(mergedStatusPort(config), hosts.localhost)] : []),
    ],
    cluster_manager: clusterManager(selfDiscoveryEnabled(context.metadata)),
    extra_listeners: [...readinessListeners(config, hosts), ...secureMetricsListeners(context.secureMetrics ?? { envoy: 0, merged: 0 }, hosts.wildcard)],
    tracing: config.zipkinAddress ? zipkinTracing() : null,
    prometheus_port: config.prometheusPort,
    status_port: config.statusPort,
    readiness_port: config.readinessPort,
    readiness_socket: context.readinessSocketPath,
    config_path: config.configPath,
    cert_dir: config.certDir,
    sds_socket_path: config.sdsSocket,
    ...statsVariables(config, context),
  };
}

/** stats_config's tags and matcher: flags, ProxyConfig and the pod's annotations, as Istio merges them. */
function statsVariables(config: AgentConfig, context: BootstrapContext) {
  return {
    ...statsAnnotationVariables(annotationsOf(context.metadata)),
    stats_tags: statsTags({ proxyConfig: config.extraStatTags, annotation: stringOrUndefined(annotationsOf(context.metadata)[extraStatTagsAnnotation]) }),
    stats_matcher: statsMatcher({
      flags: { prefixes: config.statsInclusionPrefixes, suffixes: config.statsInclusionSuffixes, regexps: config.statsInclusionRegexps },
      annotations: annotationsOf(context.metadata),
      proxyConfig: config.proxyStatsMatcher,
      exitOnZeroActiveConnections: config.exitOnZeroActiveConnections,
      instanceIps: instanceIps(context),
    }),
  };
}

/** Pod annotations, as ISTIO_METAJSON_ANNOTATIONS puts them in the node metadata. */
function annotationsOf(metadata: Record<string, unknown>): Record<string, unknown> {
  const annotations = metadata.ANNOTATIONS;
  return typeof annotations === 'object' && annotations !== null ? (annotations as Record<string, unknown>) : {};
}

const stringOrUndefined = (value: unknown) => (typeof value === 'string' ? value : undefined);

/** INSTANCE_IPS as the metadata says, else the IP in the node id (`type~ip~id~domain`). */
export function instanceIps(context: Pick<BootstrapContext, 'nodeId' | 'metadata'>): string[] {
  const listed = context.metadata.INSTANCE_IPS;
  if (typeof listed === 'string' && listed !== '') return splitList(listed);
  const ip = context.nodeId.split('~')[1];
  return ip ? [ip] : [];
}

/** The readiness hop needs both ends: the status server and Envoy's listener. */
const readinessEnabled = (config: AgentConfig) => config.statusPort !== 0 && config.readinessPort !== 0;
const readinessListeners = (config: AgentConfig, hosts: ListenerHosts) => (readinessEnabled(config) ? [readinessListener(config.readinessPort, hosts)] : []);

/** The merged metrics come from the status server: without it, ENVOY_SECURE_MERGED_METRICS_PORT has nothing to serve. */
function mergedStatusPort(config: AgentConfig): number {
  if (config.statusPort === 0) throw badEnv('ENVOY_SECURE_MERGED_METRICS_PORT', 'serves the status port\'s merged metrics, but --statusPort is 0');
  return config.statusPort;
}

/** Envoy's Prometheus listener: the pod's wildcard, or loopback with METRICS_LOCALHOST_ACCESS_ONLY, as Istio's template binds it. */
function prometheusHosts(config: AgentConfig, hosts: ListenerHosts, localOnly: boolean) {
  const pick = (family: { wildcard: string; localhost: string }) => (localOnly ? family.localhost : family.wildcard);
  return {
    prometheus_host: pick(hosts),
    prometheus_additional_addresses: additionalAddresses(hosts.additional && pick(hosts.additional), config.prometheusPort),
  };
}
const readinessClusters = (config: AgentConfig, context: BootstrapContext) =>
  readinessEnabled(config) ? [agentStatusCluster(context.readinessSocketPath)] : [];

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

function zipkinCluster(address: HostPort, connectTimeoutMs: number, hosts: ListenerHosts): unknown {
  const resolved = isIP(address.host) !== 0;
  return {
    name: 'zipkin',
    alt_stat_name: 'zipkin;',
    type: resolved ? 'STATIC' : 'STRICT_DNS',
    // As Istio's: a name resolves in the pod's own family (both on a dual-stack pod).
    ...(resolved ? {} : { dns_lookup_family: hosts.dnsLookupFamily }),
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
