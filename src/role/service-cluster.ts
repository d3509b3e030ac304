import type { NodeMetadata } from './metadata.ts';

/** Istio's default ServiceCluster: a name that asks for the canonical service instead. */
export const defaultServiceCluster = 'istio-proxy';

/** The app labels, in the order Istio's agent reads them for node.cluster (app first, for backward compatibility). */
const appLabels = ['app', 'app.kubernetes.io/name', 'service.istio.io/canonical-name'] as const;
/** The canonical service's labels, in Istio's order (tracingServiceName CANONICAL_NAME_*). */
const canonicalLabels = [...appLabels].reverse();

const text = (value: unknown): string => (typeof value === 'string' ? value : '');
const firstLabel = (labels: Record<string, string>, keys: readonly string[]) => keys.find((key) => Object.hasOwn(labels, key));

/**
 * node.cluster as Istio's agent sends it (getServiceCluster): with ProxyConfig
 * tracingServiceName CANONICAL_NAME_ONLY or CANONICAL_NAME_AND_NAMESPACE, the
 * canonical service; else serviceClusterOrDefault. istiod, Envoy's stats and
 * access logs show it as the service's name.
 */
export function serviceCluster(name: string, metadata: NodeMetadata): string {
  const tracing = text((metadata.PROXY_CONFIG as Record<string, unknown> | undefined)?.tracingServiceName);
  // Any tracingServiceName replaces serviceCluster (one oneof); APP_LABEL_AND_NAMESPACE is the default's rule.
  if (tracing !== 'CANONICAL_NAME_ONLY' && tracing !== 'CANONICAL_NAME_AND_NAMESPACE')
    return clusterOrDefault(tracing ? defaultServiceCluster : name, metadata);
  const labels = (metadata.LABELS ?? {}) as Record<string, string>;
  const label = firstLabel(labels, canonicalLabels);
  const canonical = label !== undefined ? labels[label]! : text(metadata.WORKLOAD_NAME) || defaultServiceCluster;
  const namespace = text(metadata.NAMESPACE);
  return tracing === 'CANONICAL_NAME_AND_NAMESPACE' && namespace !== '' ? `${canonical}.${namespace}` : clusterOrDefault(canonical, metadata);
}

/**
 * Istio's serviceClusterOrDefault: a given name other than istio-proxy as
 * is; else `<app>.<namespace>` from the pod's labels, else
 * `<workload>.<namespace>`, else `istio-proxy.<namespace>`.
 */
function clusterOrDefault(name: string, metadata: NodeMetadata): string {
  if (name !== '' && name !== defaultServiceCluster) return name;
  const labels = (metadata.LABELS ?? {}) as Record<string, string>;
  const namespace = text(metadata.NAMESPACE);
  const app = firstLabel(labels, appLabels);
  if (app !== undefined) return `${labels[app]}.${namespace}`;
  const workload = text(metadata.WORKLOAD_NAME);
  if (workload !== '') return `${workload}.${namespace}`;
  return namespace !== '' ? `${defaultServiceCluster}.${namespace}` : defaultServiceCluster;
}
