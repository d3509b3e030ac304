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
