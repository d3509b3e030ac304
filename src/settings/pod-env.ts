import { caEnv } from './ca-env.ts';
import { dnsEnv } from './dns-env.ts';
import { declareEnvSettings, readEnvText } from './env-settings.ts';

/**
 * What the pod tells the agent through its env (Istio's injection template
 * and the downward API), passed on as set: their readers check them and
 * name the variable. POD_NAMESPACE and SERVICE_ACCOUNT are the CA's rows.
 */
export const podEnv = declareEnvSettings({
  instanceIp: { env: 'INSTANCE_IP', description: "The pod's IP: the Kubernetes registry's proxy IP, and where app probes go" },
  podName: { env: 'POD_NAME', description: "The pod's name: the Kubernetes registry's proxy ID, node metadata NAME" },
  hostIp: { env: 'HOST_IP', description: 'What $(HOST_IP) in ISTIO_BOOTSTRAP_OVERRIDE becomes' },
  appProbers: {
    env: 'ISTIO_KUBE_APP_PROBERS',
    description: 'The app probes behind /app-health/… and the lifecycle hooks behind /app-lifecycle/… (JSON keyed by path)',
  },
  prometheusAnnotations: { env: 'ISTIO_PROMETHEUS_ANNOTATIONS', description: "The app's metrics merged into /stats/prometheus and /metrics (JSON)" },
  peerMetadataDiscovery: { env: 'PEER_METADATA_DISCOVERY', description: 'Node metadata METADATA_DISCOVERY' },
  proxyConfig: { env: 'PROXY_CONFIG', description: "The injection template's ProxyConfig (JSON or YAML), under the annotation and over the mesh file" },
});

/** Families of env vars, one per prefix: each `<PREFIX><NAME>` is one entry. */
export const envPrefixes = { meta: 'ISTIO_META_', metaJson: 'ISTIO_METAJSON_', xdsHeader: 'XDS_HEADER_', caHeader: 'CA_HEADER_' } as const;

/** The variables named `<prefix><NAME>` (NAME not empty), as set. */
export function readPrefixedEnv(env: NodeJS.ProcessEnv, prefixes: readonly string[]): Record<string, string> {
  const entries = Object.entries(env).filter(
    ([name, value]) => value !== undefined && prefixes.some((prefix) => name.startsWith(prefix) && name.length > prefix.length),
  );
  return Object.fromEntries(entries) as Record<string, string>;
}

/** INSTANCE_IP, POD_NAME and POD_NAMESPACE as the pod sets them: the Kubernetes registry's role (role/role.ts). */
export interface PodEnv {
  ip?: string;
  name?: string;
  namespace?: string;
}

/** What node metadata takes from the env, as set (role/metadata.ts builds it). */
export interface NodeEnv {
  /** ISTIO_META_<KEY> and ISTIO_METAJSON_<KEY>. */
  meta: Readonly<Record<string, string>>;
  /** POD_NAMESPACE, POD_NAME, SERVICE_ACCOUNT. */
  namespace?: string;
  name?: string;
  serviceAccount?: string;
  /** DNS_PROXY_ADDR: not ISTIO_META_-prefixed, yet Istio's agent sends it. */
  dnsProxyAddr?: string;
  peerMetadataDiscovery?: string;
  /** PROXY_CONFIG. */
  proxyConfig?: string;
}

/** The Kubernetes registry's inputs (role.ts). */
export const readPodEnv = (env: NodeJS.ProcessEnv): PodEnv => ({
  ip: readEnvText(env, podEnv.instanceIp), name: readEnvText(env, podEnv.podName), namespace: readEnvText(env, caEnv.namespace),
});

/** What node metadata takes from the env (role/metadata.ts). */
export const readNodeEnv = (env: NodeJS.ProcessEnv): NodeEnv => ({
  meta: readPrefixedEnv(env, [envPrefixes.meta, envPrefixes.metaJson]),
  namespace: readEnvText(env, caEnv.namespace),
  name: readEnvText(env, podEnv.podName),
  serviceAccount: readEnvText(env, caEnv.serviceAccount),
  dnsProxyAddr: readEnvText(env, dnsEnv.address),
  peerMetadataDiscovery: readEnvText(env, podEnv.peerMetadataDiscovery),
  proxyConfig: readEnvText(env, podEnv.proxyConfig),
});
