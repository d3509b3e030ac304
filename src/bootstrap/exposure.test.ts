import assert from 'node:assert/strict';
import { test } from 'node:test';
import { mergeProxyConfigs } from '../settings/proxy-config-sources.ts';
import { resolveProxyConfig } from '../settings/resolve-proxy-config.ts';
import { renderBootstrap } from './render.ts';

/**
 * What the rendered default bootstrap exposes to the pod network. Envoy's
 * admin serves /quitquitquit and /config_dump: it must listen on loopback
 * only, and every listener on another address must be one of the two
 * exact-path listeners (Prometheus and readiness), whose routes
 * exact-path-listener.test.ts checks.
 */
interface SocketAddress {
  address: string;
  port_value: number;
}
interface Bootstrap {
  admin: { address: { socket_address: SocketAddress } };
  static_resources: { listeners: { name: string; address: { socket_address: SocketAddress } }[] };
}

const loopback = new Set(['127.0.0.1', '::1']);

async function renderedDefault(values: Record<string, unknown> = {}): Promise<Bootstrap> {
  const commandLine = { values, sourceOf: () => 'default' };
  const { config } = resolveProxyConfig({ proxyType: 'sidecar', commandLine, proxyConfig: mergeProxyConfigs([]) });
  const context = { nodeId: 'sidecar~10.1.2.3~pod.ns~ns.svc.cluster.local', metadata: {}, xdsSocketPath: '/x/XDS', readinessSocketPath: '/x/ready' };
  return JSON.parse(await renderBootstrap(config, context)) as Bootstrap;
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
  assert.deepEqual(exposed.map((listener) => [listener.name, listener.address.socket_address.port_value]).sort(), [['agent_readiness', 15021], ['prometheus_stats', 15090]]);
});
