import type { NodeMetadata } from './metadata.ts';

/** Istio's default ServiceCluster: a name that asks for the canonical service instead. */
export const defaultServiceCluster = 'istio-proxy';

/** The app labels, in the order Istio's agent reads them for node.cluster (app first, for backward compatibility). */
const appLabels = ['app', 'app.kubernetes.io/name', 'service.istio.io/canonical-name'] as const;

/**
 * node.cluster as Istio's agent sends it (serviceClusterOrDefault): a given
 * name other than istio-proxy as is; else `<app>.<namespace>` from the pod's
 * labels, else `<workload>.<namespace>`, else `istio-proxy.<namespace>`.
 * istiod and Envoy's stats and access logs show it as the service's name.
 */
export function serviceCluster(name: string, metadata: NodeMetadata): string {
  if (name !== '' && name !== defaultServiceCluster) return name;
  const labels = (metadata.LABELS ?? {}) as Record<string, string>;
  const namespace = typeof metadata.NAMESPACE === 'string' ? metadata.NAMESPACE : '';
  const app = appLabels.find((label) => Object.hasOwn(labels, label));
  if (app !== undefined) return `${labels[app]}.${namespace}`;
  const workload = typeof metadata.WORKLOAD_NAME === 'string' ? metadata.WORKLOAD_NAME : '';
  if (workload !== '') return `${workload}.${namespace}`;
  return namespace !== '' ? `${defaultServiceCluster}.${namespace}` : defaultServiceCluster;
}
