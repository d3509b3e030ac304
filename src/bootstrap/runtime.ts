/**
 * The parts of Istio's bootstrap that come from ProxyConfig rather than
 * flags (Istio: pkg/bootstrap/config.go): Envoy's runtime layers, the
 * overload manager's connection limit, the compressor on the Prometheus
 * listener; and what ProxyConfig asks for that this bootstrap does not render.
 */
import { AgentError } from '../shared/errors.ts';

type ProxyConfig = Record<string, unknown>;

/** Envoy's largest connection count: "no limit" as Istio renders it. */
export const unlimitedConnections = 2_147_483_647;

/** Istio's static runtime layer: without the RE2 size, a route regex istiod accepts is refused by Envoy. */
const defaultRuntime: Record<string, unknown> = {
  're2.max_program_size.error_level': '32768',
  'envoy.deprecated_features:envoy.config.listener.v3.Listener.hidden_envoy_deprecated_use_original_dst': true,
  'envoy.reloadable_features.http_reject_path_with_fragment': false,
  'envoy.reloadable_features.fixed_heap_use_allocated': true,
  'envoy.reloadable_features.coalesce_lb_rebuilds_on_batch_update': false,
};

const badProxyConfig = (field: string, reason: string) => new AgentError('BAD_ENV', `ProxyConfig ${field}: ${reason}`);

const stringMap = (config: ProxyConfig, field: string): Record<string, string> => {
  const value = config[field];
  return typeof value === 'object' && value !== null ? (value as Record<string, string>) : {};
};

/**
 * The static layer: Istio's defaults with ProxyConfig `runtimeValues` over
 * them ("" removes a default; "true"/"false" become booleans, as Envoy no
 * longer reads those as strings).
 */
export function runtimeFlags(proxyConfig: ProxyConfig): Record<string, unknown> {
  const flags = { ...defaultRuntime };
  for (const [key, value] of Object.entries(stringMap(proxyConfig, 'runtimeValues'))) {
    if (value === '') delete flags[key];
    else flags[key] = value === 'true' ? true : value === 'false' ? false : value;
  }
  return flags;
}

/**
 * The overload manager's limit, by Istio's precedence: ProxyConfig
 * `connectionSettings.globalDownstreamConnectionLimit`, then
 * `ISTIO_META_GLOBAL_DOWNSTREAM_MAX_CONNECTIONS` (proxyMetadata, or the
 * node's env), then the deprecated runtime value; else no limit.
 */
export function globalDownstreamMaxConnections(proxyConfig: ProxyConfig, metadata: Record<string, unknown>): number {
  const settings = proxyConfig.connectionSettings as Record<string, unknown> | undefined;
  const limit = settings?.globalDownstreamConnectionLimit ?? settings?.global_downstream_connection_limit;
  if (limit !== undefined && limit !== null) {
    const value = Number(limit);
    if (!Number.isInteger(value) || value < 0 || value > unlimitedConnections) throw badProxyConfig('connectionSettings.globalDownstreamConnectionLimit', `${JSON.stringify(limit)} is not a connection count`);
    if (value > 0) return value;
  }
  const fromMetadata = stringMap(proxyConfig, 'proxyMetadata').ISTIO_META_GLOBAL_DOWNSTREAM_MAX_CONNECTIONS ?? metadata.GLOBAL_DOWNSTREAM_MAX_CONNECTIONS;
  if (fromMetadata !== undefined) return connectionCount('ISTIO_META_GLOBAL_DOWNSTREAM_MAX_CONNECTIONS', String(fromMetadata));
  const fromRuntime = stringMap(proxyConfig, 'runtimeValues')['overload.global_downstream_max_connections'];
  if (fromRuntime !== undefined && fromRuntime !== '') return connectionCount('runtimeValues["overload.global_downstream_max_connections"]', fromRuntime);
  return unlimitedConnections;
}

function connectionCount(field: string, text: string): number {
  const value = Number(text);
  if (!/^\d+$/.test(text) || value > unlimitedConnections) throw badProxyConfig(field, `"${text}" is not a connection count`);
  return value;
}

/** Brotli, zstd and gzip on Envoy's Prometheus listener (ProxyConfig `statsCompression`, on unless false), as Istio's. */
export function statsCompressionFilters(proxyConfig: ProxyConfig): unknown[] {
  if (proxyConfig.statsCompression === false) return [];
  const contentType = ['text/plain', 'application/vnd.google.protobuf', 'application/openmetrics-text', 'application/openmetrics-protobuf'];
  return ['brotli', 'zstd', 'gzip'].map((codec) => ({
    name: `envoy.filters.http.compressor.${codec}`,
    typed_config: {
      '@type': 'type.googleapis.com/envoy.extensions.filters.http.compressor.v3.Compressor',
      compressor_library: {
        name: `stats_${codec}`,
        typed_config: { '@type': `type.googleapis.com/envoy.extensions.compression.${codec}.compressor.v3.${codec[0]!.toUpperCase()}${codec.slice(1)}` },
      },
      response_direction_config: { common_config: { content_type: contentType } },
    },
  }));
}

/** Tracing providers this bootstrap renders: zipkin only (tracing.zipkin.address). */
const renderedTracers = new Set(['zipkin', 'sampling', 'custom_tags', 'customTags', 'max_path_tag_length', 'maxPathTagLength', 'tlsSettings', 'tls_settings']);

/**
 * ProxyConfig fields that ask Envoy's bootstrap for something this one does
 * not render (a tracer other than zipkin, the access log and metrics
 * services): each is one warning line instead of silence.
 */
export function unrenderedProxyConfig(proxyConfig: ProxyConfig): string[] {
  const tracing = proxyConfig.tracing;
  const tracers = typeof tracing === 'object' && tracing !== null ? Object.keys(tracing).filter((name) => !renderedTracers.has(name)).map((name) => `tracing.${name}`) : [];
  const services = ['envoyAccessLogService', 'envoyMetricsService'].filter((field) => {
    const value = proxyConfig[field] as Record<string, unknown> | undefined;
    return typeof value === 'object' && value !== null && Boolean(value.address);
  });
  return [...tracers, ...services];
}
