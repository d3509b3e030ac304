/**
 * The shape of every HTTP listener the bootstrap opens to the pod network
 * (the wildcard of the pod's IP family, listener-hosts.ts): it
 * passes exactly one `GET <path>` to one cluster and answers anything else
 * itself. Envoy normalises the path first (dot segments, `%2e`, merged
 * slashes) and refuses encoded slashes, so no spelling of a path reaches the
 * upstream as another path: the upstream (Envoy's admin, the agent) only ever
 * sees the one canonical path. The Prometheus listener in
 * templates/envoy_bootstrap.json is written out the same way, and a test
 * holds the two together.
 */
export interface ExactPathListenerOptions {
  name: string;
  /** The wildcard (or, for metrics kept local, the loopback) of the pod's first IP family. */
  host: string;
  port: number | string;
  /** Envoy's additional_addresses: the other family's on a dual-stack pod; null or absent for none. */
  additionalAddresses?: unknown;
  statPrefix: string;
  /** The one path that passes, e.g. `/healthz/ready`. */
  path: string;
  /** Further exact paths to the same cluster (the merged metrics' `/metrics`). */
  alsoPaths?: readonly string[];
  cluster: string;
  /** HTTP filters before the router (the template splices the stats compressors in here). */
  filtersBeforeRouter?: readonly unknown[];
}

export function exactPathListener(options: ExactPathListenerOptions): unknown {
  return {
    name: options.name,
    address: { socket_address: { address: options.host, port_value: options.port } },
    ...(options.additionalAddresses ? { additional_addresses: options.additionalAddresses } : {}),
    // As Istio's: the pod's own probes and scrapes pass even when the global connection limit is reached.
    ignore_global_conn_limit: true,
    bypass_overload_manager: true,
    filter_chains: [{ filters: [exactPathConnectionManager(options)] }],
  };
}

const router = { name: 'envoy.filters.http.router', typed_config: { '@type': 'type.googleapis.com/envoy.extensions.filters.http.router.v3.Router' } };

function exactPathConnectionManager(options: ExactPathListenerOptions): unknown {
  return {
    name: 'envoy.filters.network.http_connection_manager',
    typed_config: {
      '@type': 'type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager',
      stat_prefix: options.statPrefix,
      codec_type: 'AUTO',
      normalize_path: true,
      merge_slashes: true,
      path_with_escaped_slashes_action: 'REJECT_REQUEST',
      route_config: { name: options.name, virtual_hosts: [{ name: 'backend', domains: ['*'], routes: exactPathRoutes(options) }] },
      http_filters: [...(options.filtersBeforeRouter ?? []), router],
    },
  };
}

/** GET on the path goes upstream; another method there is 405; every other path is 404. */
function exactPathRoutes({ path, alsoPaths = [], cluster }: ExactPathListenerOptions): unknown[] {
  return [
    ...[path, ...alsoPaths].flatMap((exact) => [
      { match: { path: exact, headers: [{ name: ':method', string_match: { exact: 'GET' } }] }, route: { cluster } },
      { match: { path: exact }, direct_response: { status: 405 }, response_headers_to_add: [{ header: { key: 'allow', value: 'GET' } }] },
    ]),
    { match: { prefix: '/' }, direct_response: { status: 404 } },
  ];
}
