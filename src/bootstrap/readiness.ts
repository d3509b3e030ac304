/**
 * Istio's readiness hop: Envoy listens on the readiness port (15021) and
 * routes `/healthz/ready` to the agent's status server, so a probe that
 * passes also proves Envoy accepts connections.
 */
export function readinessListener(readinessPort: number): unknown {
  return {
    name: 'agent_readiness',
    address: { socket_address: { address: '0.0.0.0', port_value: readinessPort } },
    filter_chains: [{ filters: [readinessRoutes()] }],
  };
}

function readinessRoutes(): unknown {
  return {
    name: 'envoy.filters.network.http_connection_manager',
    typed_config: {
      '@type': 'type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager',
      stat_prefix: 'agent',
      codec_type: 'AUTO',
      route_config: {
        virtual_hosts: [{ name: 'backend', domains: ['*'], routes: [{ match: { prefix: '/healthz/ready' }, route: { cluster: 'agent' } }] }],
      },
      http_filters: [{ name: 'envoy.filters.http.router', typed_config: { '@type': 'type.googleapis.com/envoy.extensions.filters.http.router.v3.Router' } }],
    },
  };
}

/** The static cluster that reaches the agent's status server on loopback. */
export function agentStatusCluster(statusPort: number): unknown {
  return {
    name: 'agent',
    type: 'STATIC',
    connect_timeout: '0.250s',
    lb_policy: 'ROUND_ROBIN',
    load_assignment: {
      cluster_name: 'agent',
      endpoints: [{ lb_endpoints: [{ endpoint: { address: { socket_address: { address: '127.0.0.1', port_value: statusPort } } } }] }],
    },
  };
}
