import assert from 'node:assert/strict';
import { test } from 'node:test';
import { mergedMetricsCluster, secureMetricsListeners } from './secure-metrics.ts';

interface Listener {
  name: string;
  address: { socket_address: { address: string; port_value: number } };
  filter_chains: {
    filter_chain_match: unknown;
    transport_socket: { typed_config: { require_client_certificate: boolean; common_tls_context: Record<string, { name: string }[] | unknown> } };
    filters: { typed_config: { route_config: { virtual_hosts: { routes: { match: { path?: string }; route?: { cluster: string } }[] }[] } } }[];
  }[];
}

const forwarded = (listener: Listener) =>
  listener.filter_chains[0]!.filters[0]!.typed_config.route_config.virtual_hosts[0]!.routes.flatMap((r) => (r.route ? [[r.match.path, r.route.cluster]] : []));

test('no mTLS metrics port, no listener', () => {
  assert.deepEqual(secureMetricsListeners({ envoy: 0, merged: 0 }, '0.0.0.0'), []);
});

test('each mTLS metrics listener takes TLS only, demands a client certificate, and passes exact GET paths to its cluster', () => {
  const listeners = secureMetricsListeners({ envoy: 15091, merged: 15092 }, '::') as Listener[];
  assert.deepEqual(listeners.map((l) => [l.address.socket_address.address, l.address.socket_address.port_value]), [['::', 15091], ['::', 15092]]);
  for (const listener of listeners) {
    const [chain] = listener.filter_chains;
    assert.equal(listener.filter_chains.length, 1);
    assert.deepEqual(chain!.filter_chain_match, { transport_protocol: 'tls' });
    assert.equal(chain!.transport_socket.typed_config.require_client_certificate, true);
    const tls = chain!.transport_socket.typed_config.common_tls_context as { tls_certificate_sds_secret_configs: { name: string }[]; combined_validation_context: { validation_context_sds_secret_config: { name: string } } };
    assert.deepEqual([tls.tls_certificate_sds_secret_configs[0]!.name, tls.combined_validation_context.validation_context_sds_secret_config.name], ['default', 'ROOTCA']);
  }
  assert.deepEqual(forwarded(listeners[0]!), [['/stats/prometheus', 'prometheus_stats']]);
  assert.deepEqual(forwarded(listeners[1]!), [['/stats/prometheus', 'agent_merged_metrics'], ['/metrics', 'agent_merged_metrics']]);
});

test('the merged metrics come from the status server on loopback', () => {
  const cluster = mergedMetricsCluster(15020, '127.0.0.1') as { name: string; load_assignment: { endpoints: { lb_endpoints: { endpoint: unknown }[] }[] } };
  assert.equal(cluster.name, 'agent_merged_metrics');
  assert.deepEqual(cluster.load_assignment.endpoints[0]!.lb_endpoints[0]!.endpoint, { address: { socket_address: { address: '127.0.0.1', port_value: 15020 } } });
});

test('each mTLS listener is named by its port and counts its own stats; a port of 0 renders only the other', () => {
  const prefixOf = (listener: Listener) => (listener.filter_chains[0]!.filters[0]!.typed_config as unknown as { stat_prefix: string }).stat_prefix;
  const cases: [{ envoy: number; merged: number }, [string, string][]][] = [
    [{ envoy: 15091, merged: 0 }, [['secure_metrics_15091', 'secure_stats']]],
    [{ envoy: 0, merged: 15092 }, [['secure_metrics_15092', 'secure_merged_stats']]],
    [{ envoy: 15091, merged: 15092 }, [['secure_metrics_15091', 'secure_stats'], ['secure_metrics_15092', 'secure_merged_stats']]],
  ];
  for (const [ports, expected] of cases) {
    const listeners = secureMetricsListeners(ports, '0.0.0.0') as Listener[];
    assert.deepEqual(listeners.map((l) => [l.name, prefixOf(l)]), expected, JSON.stringify(ports));
  }
});

test('the TLS is sniffed by the TLS inspector, and both secrets come over the agent\'s SDS (sds-grpc, ADS-style V3 gRPC)', () => {
  const sds = {
    api_config_source: {
      api_type: 'GRPC', grpc_services: [{ envoy_grpc: { cluster_name: 'sds-grpc' } }], set_node_on_first_message_only: true, transport_api_version: 'V3',
    },
    resource_api_version: 'V3',
  };
  const [listener] = secureMetricsListeners({ envoy: 15091, merged: 0 }, '0.0.0.0') as (Listener & { listener_filters: unknown })[];
  assert.deepEqual(listener!.listener_filters, [{
    name: 'envoy.filters.listener.tls_inspector',
    typed_config: { '@type': 'type.googleapis.com/envoy.extensions.filters.listener.tls_inspector.v3.TlsInspector' },
  }]);
  assert.deepEqual(listener!.filter_chains[0]!.transport_socket, {
    name: 'envoy.transport_sockets.tls',
    typed_config: {
      '@type': 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext',
      require_client_certificate: true,
      common_tls_context: {
        tls_certificate_sds_secret_configs: [{ name: 'default', sds_config: sds }],
        combined_validation_context: { default_validation_context: {}, validation_context_sds_secret_config: { name: 'ROOTCA', sds_config: sds } },
      },
    },
  });
});

test('the merged metrics cluster: static, one loopback endpoint, a short connect timeout, its name closed for the stats tag', () => {
  assert.deepEqual(mergedMetricsCluster(15020, '::1'), {
    name: 'agent_merged_metrics',
    alt_stat_name: 'agent_merged_metrics;',
    type: 'STATIC',
    connect_timeout: '0.250s',
    lb_policy: 'ROUND_ROBIN',
    load_assignment: {
      cluster_name: 'agent_merged_metrics',
      endpoints: [{ lb_endpoints: [{ endpoint: { address: { socket_address: { address: '::1', port_value: 15020 } } } }] }],
    },
  });
});
