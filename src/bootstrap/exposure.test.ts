import assert from 'node:assert/strict';
import { test } from 'node:test';
import { renderSidecarBootstrap, type RenderedListener, type SocketAddress } from '../../test/support/rendered-bootstrap.ts';

/**
 * What the rendered default bootstrap exposes to the pod network. Envoy's
 * admin serves /quitquitquit and /config_dump: it must listen on loopback
 * only, and every listener on another address must be one of the two
 * exact-path listeners (Prometheus and readiness), whose routes
 * exact-path-listener.test.ts checks.
 */
interface Listener extends RenderedListener {
  filter_chains: { filters: { typed_config: { stat_prefix: string; route_config: { virtual_hosts: { routes: { route?: { cluster: string } }[] }[] } } }[] }[];
}
interface Bootstrap {
  admin: { address: { socket_address: SocketAddress } };
  static_resources: { listeners: Listener[]; clusters: { name: string }[] };
}

/** The one cluster a listener passes requests to. */
const upstreamOf = (listener: Listener) =>
  listener.filter_chains[0]!.filters[0]!.typed_config.route_config.virtual_hosts[0]!.routes.flatMap((route) => (route.route ? [route.route.cluster] : []));

const loopback = new Set(['127.0.0.1', '::1']);

async function renderedDefault(values: Record<string, unknown> = {}): Promise<Bootstrap> {
  const context = { nodeId: 'sidecar~10.1.2.3~pod.ns~ns.svc.cluster.local', metadata: {}, xdsSocketPath: '/x/XDS', readinessSocketPath: '/x/ready' };
  return renderSidecarBootstrap<Bootstrap>(context, values);
}

test('Envoy\'s admin listens on loopback only, on --proxyAdminPort', async () => {
  for (const port of [15000, 16000]) {
    const admin = (await renderedDefault({ proxyAdminPort: port })).admin.address.socket_address;
    assert.ok(loopback.has(admin.address), `admin bound to ${admin.address}`);
    assert.equal(admin.port_value, port);
  }
});

test('the only listeners off loopback are the Prometheus and readiness exact-path listeners', async () => {
  const listeners = (await renderedDefault()).static_resources.listeners;
  const exposed = listeners.filter((listener) => !loopback.has(listener.address.socket_address.address));
  assert.deepEqual(exposed.map((listener) => [listener.name, listener.address.socket_address.port_value]).sort(), [
    ['agent_readiness', 15021],
    ['prometheus_stats', 15090],
  ]);
});

test('what the 0.0.0.0 listeners pass to: admin on loopback for Prometheus, the agent\'s own socket for readiness', async () => {
  const { static_resources: resources } = await renderedDefault();
  const listener = (name: string) => resources.listeners.find((candidate) => candidate.name === name)!;
  const cluster = (name: string) => resources.clusters.find((candidate) => candidate.name === name);
  assert.deepEqual(upstreamOf(listener('prometheus_stats')), ['prometheus_stats']);
  assert.deepEqual(upstreamOf(listener('agent_readiness')), ['agent']);
  assert.equal(listener('agent_readiness').filter_chains[0]!.filters[0]!.typed_config.stat_prefix, 'agent');
  const endpoint = (name: string) =>
    (cluster(name) as unknown as { load_assignment: { cluster_name: string; endpoints: { lb_endpoints: { endpoint: { address: unknown } }[] }[] } })
      .load_assignment;
  assert.deepEqual(endpoint('prometheus_stats').endpoints, [
    { lb_endpoints: [{ endpoint: { address: { socket_address: { address: '127.0.0.1', port_value: 15000 } } } }] },
  ]);
  assert.deepEqual(cluster('agent'), {
    name: 'agent', alt_stat_name: 'agent;', type: 'STATIC', connect_timeout: '0.250s', lb_policy: 'ROUND_ROBIN',
    load_assignment: { cluster_name: 'agent', endpoints: [{ lb_endpoints: [{ endpoint: { address: { pipe: { path: '/x/ready' } } } }] }] },
  });
});

test('with no readiness port there is no readiness listener and no cluster to the agent', async () => {
  const { static_resources: resources } = await renderedDefault({ readinessPort: 0 });
  assert.deepEqual(resources.listeners.map((listener) => listener.name), ['prometheus_stats']);
  assert.equal(resources.clusters.some((cluster) => cluster.name === 'agent'), false);
});
