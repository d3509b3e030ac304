import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { exactPathListener } from './exact-path-listener.ts';
import { readinessListener } from './readiness.ts';
import { defaultTemplatePath } from './render.ts';

interface Listener {
  name: string;
  filter_chains: { filters: { typed_config: Record<string, unknown> }[] }[];
}

const connectionManager = (listener: unknown) => (listener as Listener).filter_chains[0]!.filters[0]!.typed_config;

test('the template\'s Prometheus listener is the exact-path listener, written out', () => {
  const template = JSON.parse(readFileSync(defaultTemplatePath, 'utf8')) as { static_resources: { listeners: unknown[] } };
  const prometheus = template.static_resources.listeners.find((listener) => (listener as Listener).name === 'prometheus_stats');
  const expected = exactPathListener({
    name: 'prometheus_stats',
    host: '{{ prometheus_host }}',
    port: '{{ prometheus_port }}',
    additionalAddresses: '{{ prometheus_additional_addresses }}',
    statPrefix: 'stats',
    path: '/stats/prometheus',
    cluster: 'prometheus_stats',
    filtersBeforeRouter: ['{{ ...stats_compression_filters }}'],
  });
  assert.deepEqual(prometheus, expected);
});

test('both pod-facing listeners normalise paths and pass one exact GET path, answering the rest themselves', () => {
  for (const [listener, path] of [
    [exactPathListener({ name: 'p', host: '0.0.0.0', port: 1, statPrefix: 's', path: '/stats/prometheus', cluster: 'c' }), '/stats/prometheus'],
    [readinessListener(15021, { wildcard: '::' }), '/healthz/ready'],
  ] as const) {
    const manager = connectionManager(listener);
    // No filter asked before the router: the router alone.
    assert.deepEqual((manager.http_filters as { name: string }[]).map((filter) => filter.name), ['envoy.filters.http.router']);
    assert.equal(manager.normalize_path, true);
    assert.equal(manager.merge_slashes, true);
    assert.equal(manager.path_with_escaped_slashes_action, 'REJECT_REQUEST');
    const [host] = (manager.route_config as { virtual_hosts: { domains: string[]; routes: { match: Record<string, unknown>; route?: unknown }[] }[] }).virtual_hosts;
    assert.deepEqual(host!.domains, ['*'], 'any Host header');
    const routes = host!.routes;
    const forwarded = routes.filter((route) => route.route);
    assert.equal(forwarded.length, 1, 'one route goes upstream');
    assert.equal(forwarded[0]!.match.path, path);
    assert.equal(forwarded[0]!.match.prefix, undefined, 'never a prefix match');
    assert.deepEqual(forwarded[0]!.match.headers, [{ name: ':method', string_match: { exact: 'GET' } }]);
  }
});
