import { AgentError } from '../shared/errors.ts';
import type { MergedProxyConfig } from './proxy-config-sources.ts';

/** The ProxyConfig fields the bootstrap renders beyond the flags' (Istio's pkg/bootstrap/config.go). */
export interface BootstrapProxyConfig {
  /** ProxyConfig.runtimeValues, laid over Istio's runtime defaults. */
  runtimeValues?: Record<string, string>;
  /** ProxyConfig.statsCompression: the Prometheus listener's compressors (on unless false). */
  statsCompression?: boolean;
  /** The overload manager's global downstream connection limit, when something sets one. */
  globalDownstreamMaxConnections?: number;
  /** ProxyConfig.fileFlushMinSizeKb: Envoy's --file-flush-min-size-kb when above 0, as Istio passes it. */
  fileFlushMinSizeKb?: number;
  /** ProxyConfig tracing providers and services that are configured but not rendered, by field. */
  unrendered: string[];
}

/** The proxyMetadata key (and env var) Istio reads the limit from when connectionSettings does not set it. */
export const globalDownstreamMaxConnectionsKey = 'ISTIO_META_GLOBAL_DOWNSTREAM_MAX_CONNECTIONS';
const runtimeLimitKey = 'overload.global_downstream_max_connections';

const bad = (source: string, reason: string) => new AgentError('BAD_ENV', `${source}: ${reason}`);
const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** Reads them from the merged ProxyConfig (checkProxyConfig already checked the top-level types); bad values name the field. */
export function bootstrapProxyConfig(merged: MergedProxyConfig, env: NodeJS.ProcessEnv = {}): BootstrapProxyConfig {
  const value = merged.value;
  const runtimeValues = (value.runtimeValues ?? value.runtime_values) as Record<string, string> | undefined;
  const compression = value.statsCompression ?? value.stats_compression;
  return {
    runtimeValues,
    statsCompression: typeof compression === 'boolean' ? compression : undefined,
    globalDownstreamMaxConnections: connectionLimit(merged, env, runtimeValues),
    fileFlushMinSizeKb: flushMinSize(merged),
    unrendered: unrenderedFields(value),
  };
}

/** A uint32 in ProxyConfig (protojson takes a number or its decimal text); 0 or unset: Envoy's default. */
function flushMinSize(merged: MergedProxyConfig): number | undefined {
  const raw = merged.value.fileFlushMinSizeKb ?? merged.value.file_flush_min_size_kb;
  if (raw === undefined || raw === null) return undefined;
  const value = Number(String(raw).trim());
  if (!Number.isSafeInteger(value) || value < 0 || value > 4294967295) {
    const source = `${merged.origin.fileFlushMinSizeKb ?? 'ProxyConfig'}: field fileFlushMinSizeKb`;
    throw bad(source, `${JSON.stringify(raw)} is not a size in KiB (0 to 4294967295)`);
  }
  return value > 0 ? value : undefined;
}

/**
 * Istio's precedence: connectionSettings.globalDownstreamConnectionLimit
 * (when above 0), then proxyMetadata's ISTIO_META_GLOBAL_DOWNSTREAM_MAX_CONNECTIONS
 * (the injector also puts it in the env, where an Istio 1.1-style pod sets
 * it), then the deprecated runtime key. Envoy takes only a limit above 0.
 */
function connectionLimit(merged: MergedProxyConfig, env: NodeJS.ProcessEnv, runtimeValues?: Record<string, string>): number | undefined {
  const value = merged.value;
  const settings = value.connectionSettings ?? value.connection_settings;
  const metadata = (value.proxyMetadata ?? value.proxy_metadata) as Record<string, string> | undefined;
  const origin = (field: string) => `${merged.origin[field] ?? 'ProxyConfig'}: field`;
  const candidates: Candidate[] = [
    {
      raw: isObject(settings) ? (settings.globalDownstreamConnectionLimit ?? settings.global_downstream_connection_limit) : undefined,
      source: `${origin('connectionSettings')} connectionSettings.globalDownstreamConnectionLimit`,
      zeroIsUnset: true,
    },
    { raw: metadata?.[globalDownstreamMaxConnectionsKey], source: `${origin('proxyMetadata')} proxyMetadata.${globalDownstreamMaxConnectionsKey}` },
    { raw: env[globalDownstreamMaxConnectionsKey] || undefined, source: `env ${globalDownstreamMaxConnectionsKey}` },
    { raw: runtimeValues?.[runtimeLimitKey] || undefined, source: `${origin('runtimeValues')} runtimeValues.${runtimeLimitKey}` },
  ];
  for (const candidate of candidates) {
    const found = candidate.raw === undefined || candidate.raw === null ? undefined : limit(candidate);
    if (found !== undefined) return found;
  }
  return undefined;
}

interface Candidate {
  raw: unknown;
  /** Names the setting in the error line. */
  source: string;
  /** connectionSettings: 0 is unset and the next source counts (Istio takes it only above 0). */
  zeroIsUnset?: boolean;
}

/** A whole number of connections, 1 to int32's max (Envoy refuses 0). */
function limit({ raw, source, zeroIsUnset }: Candidate): number | undefined {
  const text = String(raw).trim();
  const value = /^-?\d+$/.test(text) ? Number(text) : Number.NaN;
  if (zeroIsUnset && value === 0) return undefined;
  if (Number.isSafeInteger(value) && value >= 1 && value <= 2147483647) return value;
  throw bad(source, `${JSON.stringify(raw)} is not a connection limit (a whole number from 1 to 2147483647)`);
}

/** Tracers Istio's bootstrap renders that ours does not (zipkin is rendered), and the services. */
const unrenderedTracers = ['lightstep', 'datadog', 'stackdriver', 'openCensusAgent', 'open_census_agent'];

function unrenderedFields(value: Record<string, unknown>): string[] {
  const found: string[] = [];
  const tracing = value.tracing;
  if (isObject(tracing)) {
    for (const name of unrenderedTracers) if (isObject(tracing[name])) found.push(`tracing.${name}`);
    if (isObject(tracing.tlsSettings ?? tracing.tls_settings)) found.push('tracing.tlsSettings');
  }
  for (const name of ['envoyMetricsService', 'envoyAccessLogService'] as const) {
    const service = value[name] ?? value[name.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`)];
    if (isObject(service) && typeof service.address === 'string' && service.address !== '') found.push(name);
  }
  const legacy = value.envoyMetricsServiceAddress ?? value.envoy_metrics_service_address;
  if (typeof legacy === 'string' && legacy !== '') found.push('envoyMetricsServiceAddress');
  return found;
}
