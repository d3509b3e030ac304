import assert from 'node:assert/strict';
import { test } from 'node:test';
import { renderSidecarBootstrap, type RenderedListener as Listener } from '../../test/support/rendered-bootstrap.ts';
import { listenerHosts } from './listener-hosts.ts';
import type { BootstrapContext } from './variables.ts';

test('listenerHosts: the pod\'s IP families decide the wildcard, as Istio\'s bootstrap does', () => {
  const v4 = { wildcard: '0.0.0.0', localhost: '127.0.0.1' };
  const v6 = { wildcard: '::', localhost: '::1' };
  const cases: [string[], boolean, unknown][] = [
    [[], false, { ...v4, dnsLookupFamily: 'V4_ONLY' }],
    [['198.18.0.2'], true, { ...v4, dnsLookupFamily: 'V4_ONLY' }],
    [['2001:2::2'], false, { ...v6, dnsLookupFamily: 'V6_ONLY' }],
    [['2001:2::2', 'not-an-ip'], false, { ...v6, dnsLookupFamily: 'V6_ONLY' }],
    // Dual stack without ISTIO_DUAL_STACK stays IPv4, as Istio's.
    [['198.18.0.2', '2001:2::2'], false, { ...v4, dnsLookupFamily: 'V4_ONLY' }],
    [['2001:2::2', '198.18.0.2'], false, { ...v4, dnsLookupFamily: 'V4_ONLY' }],
    [['198.18.0.2', '2001:2::2'], true, { ...v4, additional: v6, dnsLookupFamily: 'ALL' }],
    [['2001:2::2', '198.18.0.2'], true, { ...v6, additional: v4, dnsLookupFamily: 'ALL' }],
    [['fe80::1', '198.18.0.2'], true, { ...v4, additional: v6, dnsLookupFamily: 'ALL' }],
    // Link-local is the prefix only: fe80 further in is a global IPv6 address.
    [['2001:2::fe80:1', '198.18.0.2'], true, { ...v6, additional: v4, dnsLookupFamily: 'ALL' }],
  ];
  for (const [ips, dualStack, expected] of cases) assert.deepEqual(listenerHosts(ips, dualStack), expected, `${ips.join(',')} dual=${dualStack}`);
});

async function listeners(ips: string, context: Partial<BootstrapContext> = {}): Promise<Record<string, [string, ...string[]]>> {
  const nodeId = `sidecar~${ips.split(',')[0]}~pod.ns~ns.svc.cluster.local`;
  const full = { nodeId, metadata: { INSTANCE_IPS: ips }, xdsSocketPath: '/x/XDS', readinessSocketPath: '/x/ready', ...context };
  const rendered = await renderSidecarBootstrap<{ static_resources: { listeners: Listener[] } }>(full);
  const where = (listener: Listener): [string, ...string[]] => [
    `${listener.address.socket_address.address}:${listener.address.socket_address.port_value}`,
    ...(listener.additional_addresses ?? []).map(({ address }) => `${address.socket_address.address}:${address.socket_address.port_value}`),
  ];
  return Object.fromEntries(rendered.static_resources.listeners.map((listener) => [listener.name, where(listener)]));
}

test('an IPv6-only pod\'s Prometheus and readiness listeners bind ::, an IPv4 pod\'s 0.0.0.0', async () => {
  assert.deepEqual(await listeners('2001:2::2'), { prometheus_stats: [':::15090'], agent_readiness: [':::15021'] });
  assert.deepEqual(await listeners('198.18.0.2'), { prometheus_stats: ['0.0.0.0:15090'], agent_readiness: ['0.0.0.0:15021'] });
});

test('a dual-stack pod with ISTIO_DUAL_STACK binds both families, its first IP\'s first; without it, IPv4 only', async () => {
  const both = { prometheus_stats: ['0.0.0.0:15090', ':::15090'], agent_readiness: ['0.0.0.0:15021', ':::15021'] };
  assert.deepEqual(await listeners('198.18.0.2,2001:2::2', { dualStack: true }), both);
  assert.deepEqual(await listeners('2001:2::2,198.18.0.2', { dualStack: true }), {
    prometheus_stats: [':::15090', '0.0.0.0:15090'], agent_readiness: [':::15021', '0.0.0.0:15021'],
  });
  assert.deepEqual(await listeners('198.18.0.2,2001:2::2'), { prometheus_stats: ['0.0.0.0:15090'], agent_readiness: ['0.0.0.0:15021'] });
});

test('METRICS_LOCALHOST_ACCESS_ONLY puts the Prometheus listener on the pod\'s loopbacks; readiness stays on the wildcard', async () => {
  assert.deepEqual(await listeners('198.18.0.2', { metricsLocalhostOnly: true }), {
    prometheus_stats: ['127.0.0.1:15090'], agent_readiness: ['0.0.0.0:15021'],
  });
  assert.deepEqual(await listeners('2001:2::2', { metricsLocalhostOnly: true }), { prometheus_stats: ['::1:15090'], agent_readiness: [':::15021'] });
  assert.deepEqual(await listeners('198.18.0.2,2001:2::2', { metricsLocalhostOnly: true, dualStack: true }), {
    prometheus_stats: ['127.0.0.1:15090', '::1:15090'], agent_readiness: ['0.0.0.0:15021', ':::15021'],
  });
});

test('admin and the prometheus_stats cluster sit on the loopback of the pod\'s first family, as Istio\'s localhost', async () => {
  type Address = { socket_address: { address: string } };
  type Rendered = { admin: { address: Address }; static_resources: { clusters: { name: string; load_assignment: { endpoints: { lb_endpoints: { endpoint: { address: Address } }[] }[] } }[] } };
  const hosts = async (ips: string, dualStack = false) => {
    const context = { nodeId: `sidecar~${ips.split(',')[0]}~p.ns~ns.svc.cluster.local`, metadata: { INSTANCE_IPS: ips }, xdsSocketPath: '/x/XDS', readinessSocketPath: '/x/r', dualStack };
    const rendered = await renderSidecarBootstrap<Rendered>(context);
    const stats = rendered.static_resources.clusters.find((cluster) => cluster.name === 'prometheus_stats')!;
    return [rendered.admin.address.socket_address.address, stats.load_assignment.endpoints[0]!.lb_endpoints[0]!.endpoint.address.socket_address.address];
  };
  assert.deepEqual(await hosts('198.18.0.2'), ['127.0.0.1', '127.0.0.1']);
  assert.deepEqual(await hosts('2001:2::2'), ['::1', '::1']);
  assert.deepEqual(await hosts('2001:2::2,198.18.0.2', true), ['::1', '::1']);
  assert.deepEqual(await hosts('2001:2::2,198.18.0.2'), ['127.0.0.1', '127.0.0.1']);
});
