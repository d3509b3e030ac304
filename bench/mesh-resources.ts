// A mesh of `services` services in the peer's resource-file form, shaped
// like what istiod sends a sidecar (per service: an EDS cluster with circuit
// breakers, outlier detection and an mTLS transport socket; its endpoints;
// a virtual host), all routed to one local upstream so Envoy accepts them.
// One listener; service 0 also answers any host, for the bench's requests.
import { httpListener } from '../test/support/resources.ts';

const t = (name: string) => `type.googleapis.com/${name}`;
const clusterName = (i: number) => `outbound|9080||svc-${i}.ns-${i % 50}.svc.cluster.local`;

function cluster(i: number): unknown {
  return {
    '@type': t('envoy.config.cluster.v3.Cluster'),
    name: clusterName(i),
    type: 'EDS',
    eds_cluster_config: { eds_config: { ads: {}, resource_api_version: 'V3' }, service_name: clusterName(i) },
    connect_timeout: '10s',
    circuit_breakers: {
      thresholds: [{ max_connections: 4294967295, max_pending_requests: 4294967295, max_requests: 4294967295, max_retries: 4294967295, track_remaining: true }],
    },
    outlier_detection: { consecutive_5xx: 5, interval: '10s', base_ejection_time: '30s', max_ejection_percent: 100 },
    metadata: { filter_metadata: { istio: { services: [{ host: `svc-${i}.ns-${i % 50}.svc.cluster.local`, name: `svc-${i}`, namespace: `ns-${i % 50}` }] } } },
  };
}

function endpoints(i: number, port: number): unknown {
  const endpoint = {
    endpoint: { address: { socket_address: { address: '127.0.0.1', port_value: port } } },
    load_balancing_weight: 1,
    metadata: { filter_metadata: { istio: { workload: `svc-${i}-v1;ns-${i % 50};svc-${i};v1;Kubernetes` } } },
  };
  return {
    '@type': t('envoy.config.endpoint.v3.ClusterLoadAssignment'),
    cluster_name: clusterName(i),
    endpoints: [{ locality: { region: 'us-east1', zone: 'us-east1-b' }, lb_endpoints: [endpoint, endpoint] }],
  };
}

function virtualHost(i: number): unknown {
  const host = `svc-${i}.ns-${i % 50}.svc.cluster.local`;
  const domains = i === 0 ? ['*'] : [host, `${host}:9080`, `svc-${i}`, `svc-${i}.ns-${i % 50}`];
  return {
    name: `${host}:9080`,
    domains,
    routes: [
      {
        name: 'default',
        match: { prefix: '/' },
        route: {
          cluster: clusterName(i),
          timeout: '0s',
          retry_policy: { retry_on: 'connect-failure,refused-stream,unavailable,cancelled,retriable-status-codes', num_retries: 2 },
        },
      },
    ],
  };
}

export function meshResources(options: { services: number; listenerPort: number; upstreamPort: number }): unknown[] {
  const ids = Array.from({ length: options.services }, (_, i) => i);
  return [
    httpListener('listener_0', options.listenerPort, 'local_route'),
    { '@type': t('envoy.config.route.v3.RouteConfiguration'), name: 'local_route', virtual_hosts: ids.map(virtualHost) },
    ...ids.flatMap((i) => [cluster(i), endpoints(i, options.upstreamPort)]),
  ];
}
