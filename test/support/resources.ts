/** xDS resources in protojson form, as the peer's resource file takes them. */
const t = (name: string) => `type.googleapis.com/${name}`;

export function httpListener(name: string, port: number, routeName: string): unknown {
  return {
    '@type': t('envoy.config.listener.v3.Listener'),
    name,
    address: { socket_address: { address: '127.0.0.1', port_value: port } },
    filter_chains: [{ filters: [httpConnectionManager(routeName)] }],
  };
}

function httpConnectionManager(routeName: string): unknown {
  return {
    name: 'envoy.filters.network.http_connection_manager',
    typed_config: {
      '@type': t('envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager'),
      stat_prefix: 'ingress_http',
      rds: { route_config_name: routeName, config_source: { ads: {}, resource_api_version: 'V3' } },
      http_filters: [{ name: 'envoy.filters.http.router', typed_config: { '@type': t('envoy.extensions.filters.http.router.v3.Router') } }],
    },
  };
}

export function routeConfig(name: string, routes: { prefix: string; cluster: string }[]): unknown {
  return {
    '@type': t('envoy.config.route.v3.RouteConfiguration'),
    name,
    virtual_hosts: [{ name: 'all', domains: ['*'], routes: routes.map((route) => ({ match: { prefix: route.prefix }, route: { cluster: route.cluster } })) }],
  };
}

export function edsCluster(name: string): unknown {
  return {
    '@type': t('envoy.config.cluster.v3.Cluster'),
    name,
    type: 'EDS',
    connect_timeout: '1s',
    eds_cluster_config: { eds_config: { ads: {}, resource_api_version: 'V3' } },
  };
}

export function endpoints(clusterName: string, port: number): unknown {
  return {
    '@type': t('envoy.config.endpoint.v3.ClusterLoadAssignment'),
    cluster_name: clusterName,
    endpoints: [{ lb_endpoints: [{ endpoint: { address: { socket_address: { address: '127.0.0.1', port_value: port } } } }] }],
  };
}

/** Listener → route → EDS cluster → one local endpoint. */
export function simpleHttpService(options: { listenerPort: number; upstreamPort: number; cluster?: string }): unknown[] {
  const cluster = options.cluster ?? 'upstream';
  return [
    httpListener('listener_0', options.listenerPort, 'local_route'),
    routeConfig('local_route', [{ prefix: '/', cluster }]),
    edsCluster(cluster),
    endpoints(cluster, options.upstreamPort),
  ];
}
