import type { NodeEnv } from '../settings/pod-env.ts';
import type { PodInfo } from '../settings/pod-info.ts';
import { AgentError } from '../shared/errors.ts';
import { parseBoundedJson } from './bounded-json.ts';
import { coerceMetadata, isObject } from './metadata-types.ts';
import { istioLocalityLabel, localityFromLabels } from './locality.ts';

const metaPrefix = 'ISTIO_META_';
const metaJsonPrefix = 'ISTIO_METAJSON_';

/** The Istio release whose agent and injection our node metadata matches (istiod gates features on it). */
export const matchedIstioVersion = '1.31.0';

/** Kubernetes adds this label to every pod of a Deployment; Istio's agent leaves it out of LABELS. */
const podTemplateHashLabel = 'pod-template-hash';

export type NodeMetadata = Record<string, unknown>;
type Env = Readonly<Record<string, string | undefined>>;

/** What the agent itself knows, beyond the environment. */
export interface AgentFacts {
  /** The role's IP first, then the host's other addresses. */
  instanceIps: readonly string[];
  /** Envoy's readiness (15021) and Prometheus (15090) listeners; 0 leaves the key out. */
  envoyStatusPort: number;
  envoyPrometheusPort: number;
  /** Istio's mTLS metrics ports (istiod leaves them uncaptured); 0 or absent leaves the key out. */
  envoySecureMetricsPort?: number;
  envoySecureMergedMetricsPort?: number;
  exitOnZeroActiveConnections: boolean;
  /** The ProxyConfig fields the agent runs with; they win over PROXY_CONFIG's. */
  proxyConfig: Record<string, unknown>;
  /** The mesh file's defaultConfig, PROXY_CONFIG and the pod annotation, merged: the rest of PROXY_CONFIG. */
  mergedProxyConfig?: Record<string, unknown>;
  /** Which of those set proxyMetadata, to name it when one of its values cannot take its type. */
  proxyMetadataSource?: string;
  /** PILOT_SAN: the discovery server's name, when Istio's agent would say MUTUAL_TLS. */
  pilotSan?: readonly string[];
  /** Envoy --skip-deprecated-logs; absent leaves the key out. */
  skipDeprecatedLogs?: boolean;
  /** The SDS socket's file name (Istio's WORKLOAD_IDENTITY_SOCKET_FILE). */
  workloadIdentitySocketFile?: string;
}

export interface NodeMetadataInput {
  node: NodeEnv;
  podInfo: PodInfo;
  agent: AgentFacts;
}

/**
 * Node metadata as Istio's agent builds it: ISTIO_META_* and ISTIO_METAJSON_*
 * typed as istiod declares them, then what the agent knows (pod identity,
 * IPs, ports, ProxyConfig, version, labels). Throws a BAD_ENV naming the
 * variable whose value cannot take its type.
 */
export function buildNodeMetadata({ node, podInfo, agent }: NodeMetadataInput): NodeMetadata {
  const fromProxyConfig = istioMetaOf(agent.mergedProxyConfig?.proxyMetadata);
  const sourceOf = (name: string) =>
    name in node.meta || !(name in fromProxyConfig) ? `env ${name}` : `${agent.proxyMetadataSource ?? 'ProxyConfig'}: field proxyMetadata.${name}`;
  const metadata = metadataFromEnv({ ...fromProxyConfig, ...node.meta }, sourceOf);
  const staticLabels = node.meta[`${metaJsonPrefix}LABELS`] === undefined ? undefined : (metadata.LABELS as Record<string, string>);
  Object.assign(metadata, definedOnly({
    NAMESPACE: node.namespace || undefined,
    NAME: node.name || undefined,
    SERVICE_ACCOUNT: node.serviceAccount || undefined,
    ISTIO_VERSION: metadata.ISTIO_VERSION ?? matchedIstioVersion,
    INSTANCE_IPS: agent.instanceIps.length > 0 ? [...new Set(agent.instanceIps)].join(',') : undefined,
    ENVOY_STATUS_PORT: agent.envoyStatusPort || undefined,
    ENVOY_PROMETHEUS_PORT: agent.envoyPrometheusPort || undefined,
    ENVOY_SECURE_METRICS_PORT: agent.envoySecureMetricsPort || undefined,
    ENVOY_SECURE_MERGED_METRICS_PORT: agent.envoySecureMergedMetricsPort || undefined,
    EXIT_ON_ZERO_ACTIVE_CONNECTIONS: agent.exitOnZeroActiveConnections ? 'true' : undefined,
    // Not ISTIO_META_-prefixed, yet Istio's agent sends it: istiod points the proxy's DNS at it.
    DNS_PROXY_ADDR: node.dnsProxyAddr || undefined,
    METADATA_DISCOVERY: metadataDiscovery(node, metadata.ENABLE_HBONE),
    ENVOY_SKIP_DEPRECATED_LOGS: agent.skipDeprecatedLogs === undefined ? undefined : String(agent.skipDeprecatedLogs),
    WORKLOAD_IDENTITY_SOCKET_FILE: agent.workloadIdentitySocketFile,
    PILOT_SAN: agent.pilotSan?.length ? [...agent.pilotSan] : undefined,
    PROXY_CONFIG: { ...proxyConfigFromEnv(node, metadata.PROXY_CONFIG, agent.mergedProxyConfig), ...agent.mergedProxyConfig, ...agent.proxyConfig },
    STATIC_LABELS: staticLabels,
    LABELS: mergeLabels(metadata.LABELS, podInfo.labels),
    ANNOTATIONS: podInfo.annotations ? { ...(metadata.ANNOTATIONS as object | undefined), ...podInfo.annotations } : undefined,
  }));
  // Istio's agent writes the locality it read back under istio-locality, with `/` for `.`.
  const locality = localityFromLabels(metadata.LABELS as Record<string, string> | undefined);
  if (locality !== undefined) metadata.LABELS = { ...(metadata.LABELS as Record<string, string>), [istioLocalityLabel]: locality };
  return metadata;
}

/**
 * ISTIO_META_<KEY>=text and ISTIO_METAJSON_<KEY>=json, each converted to the
 * type istiod declares for KEY; JSON objects merge over a same-named META value.
 */
export function metadataFromEnv(vars: Env, sourceOf: (name: string) => string = (name) => `env ${name}`): NodeMetadata {
  const bad = (name: string, reason: string) => new AgentError('BAD_ENV', `${sourceOf(name)}: ${reason}`);
  const metadata: NodeMetadata = {};
  const names = Object.keys(vars).sort();
  for (const name of withPrefix(names, metaPrefix)) {
    metadata[name.slice(metaPrefix.length)] = typed(name, name.slice(metaPrefix.length), vars[name] ?? '', bad);
  }
  for (const name of withPrefix(names, metaJsonPrefix)) {
    const key = name.slice(metaJsonPrefix.length);
    metadata[key] = typed(name, key, merge(metadata[key], parseJson(name, vars[name] ?? '', bad)), bad);
  }
  return metadata;
}

type Blame = (name: string, reason: string) => AgentError;
const blameEnv: Blame = (name, reason) => new AgentError('BAD_ENV', `env ${name}: ${reason}`);

const withPrefix = (names: string[], prefix: string) => names.filter((name) => name.startsWith(prefix) && name.length > prefix.length);

function typed(variable: string, key: string, value: unknown, bad: Blame = blameEnv): unknown {
  const coerced = coerceMetadata(key, value);
  if (!coerced.ok) throw bad(variable, `${coerced.reason}; istiod reads node metadata ${key} with that type`);
  return coerced.value;
}

function parseJson(name: string, text: string, bad: Blame): unknown {
  const parsed = parseBoundedJson(text);
  if (!parsed.ok) throw bad(name, parsed.reason);
  return parsed.value;
}

/** ProxyConfig.proxyMetadata's ISTIO_META_* entries: node metadata below the real env's, as Istio's agent takes them. */
function istioMetaOf(proxyMetadata: unknown): Record<string, string> {
  if (!isObject(proxyMetadata)) return {};
  return Object.fromEntries(Object.entries(proxyMetadata).filter(([key, value]) => key.startsWith(metaPrefix) && typeof value === 'string')) as Record<
    string,
    string
  >;
}

/** PEER_METADATA_DISCOVERY when set; else on with ambient's HBONE, as Istio's agent decides. */
function metadataDiscovery(node: NodeEnv, enableHbone: unknown): unknown {
  if (node.peerMetadataDiscovery !== undefined) return typed('PEER_METADATA_DISCOVERY', 'METADATA_DISCOVERY', node.peerMetadataDiscovery);
  return enableHbone === 'true' ? 'true' : 'false';
}

/**
 * PROXY_CONFIG (the injection template's JSON ProxyConfig), checked as istiod will read it. With a merged ProxyConfig
 * the settings have read it already, JSON or YAML (istio-start.sh exports YAML), so its fields are there.
 */
function proxyConfigFromEnv(node: NodeEnv, fromMetadata: unknown, merged: Record<string, unknown> | undefined): Record<string, unknown> {
  if (!node.proxyConfig) return (fromMetadata as Record<string, unknown> | undefined) ?? {};
  if (merged !== undefined) return {};
  return typed('PROXY_CONFIG', 'PROXY_CONFIG', node.proxyConfig) as Record<string, unknown>;
}

/** Pod labels from the downward API win over static labels, as in Istio's agent. */
function mergeLabels(staticLabels: unknown, podLabels: Record<string, string> | undefined): Record<string, string> | undefined {
  if (!podLabels) return staticLabels as Record<string, string> | undefined;
  const { [podTemplateHashLabel]: _hash, ...labels } = podLabels;
  return { ...(staticLabels as Record<string, string> | undefined), ...labels };
}

function merge(existing: unknown, incoming: unknown): unknown {
  if (isObject(existing) && isObject(incoming)) return { ...existing, ...incoming };
  return incoming;
}

function definedOnly(values: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(values).filter(([, value]) => value !== undefined));
}
