const envoyTypes = [
  'envoy.config.listener.v3.Listener',
  'envoy.config.route.v3.RouteConfiguration',
  'envoy.config.route.v3.ScopedRouteConfiguration',
  'envoy.config.route.v3.VirtualHost',
  'envoy.config.cluster.v3.Cluster',
  'envoy.config.endpoint.v3.ClusterLoadAssignment',
  'envoy.config.endpoint.v3.LbEndpoint',
  'envoy.extensions.transport_sockets.tls.v3.Secret',
  'envoy.service.runtime.v3.Runtime',
  'envoy.config.core.v3.TypedExtensionConfig',
];

/** Istio's own types on the same stream: DNS name table (NDS), ambient workloads and policies. */
const istioTypes = [
  'istio.networking.nds.v1.NameTable',
  'istio.workload.Address',
  'istio.security.Authorization',
];

const typeUrl = (type: string) => `type.googleapis.com/${type}`;

/** The types the agent itself reads or writes, not only counts. */
export const listenerType = typeUrl('envoy.config.listener.v3.Listener');
export const secretType = typeUrl('envoy.extensions.transport_sockets.tls.v3.Secret');
export const extensionConfigType = typeUrl('envoy.config.core.v3.TypedExtensionConfig');
export const nameTableType = typeUrl('istio.networking.nds.v1.NameTable');
/** Istio's workload health report (istio.v1.HealthInformation): a request the agent sends, never a resource. */
export const healthInfoType = typeUrl('istio.v1.HealthInformation');

/** The xDS type URLs a discovery server for Envoy serves; the relay's metrics label only these. */
export const knownTypeUrls: ReadonlySet<string> = new Set([...envoyTypes, ...istioTypes].map(typeUrl));

/** One bucket for every other type URL: a client must not mint label values or debug entries at will. */
export const otherType = 'other';

/** The key a type URL is counted under: itself when known, `other` when not. */
export function typeKey(typeUrl: string): string {
  return knownTypeUrls.has(typeUrl) ? typeUrl : otherType;
}
