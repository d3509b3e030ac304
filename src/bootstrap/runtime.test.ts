import assert from 'node:assert/strict';
import { test } from 'node:test';
import { mergeProxyConfigs } from '../settings/proxy-config-sources.ts';
import { resolveAgentConfig } from '../settings/resolve-agent-config.ts';
import { renderBootstrap } from './render.ts';

/** The default template rendered from a ProxyConfig, as `proxy sidecar` renders it. */
async function rendered(proxyConfig: Record<string, unknown> = {}, options: { logAsJson?: boolean; env?: Record<string, string> } = {}): Promise<any> {
  const commandLine = { values: {}, sourceOf: () => 'default' };
  const merged = mergeProxyConfigs([{ name: 'env PROXY_CONFIG', value: proxyConfig }]);
  const { config } = resolveAgentConfig({ proxyType: 'sidecar', commandLine, proxyConfig: merged, env: options.env ?? {} });
  const context = {
    nodeId: 'sidecar~10.1.2.3~pod.ns~ns.svc.cluster.local',
    metadata: {},
    xdsSocketPath: '/x/XDS',
    readinessSocketPath: '/x/ready',
    logAsJson: options.logAsJson,
  };
  return JSON.parse(await renderBootstrap(config, context));
}

const staticLayer = (bootstrap: any) => bootstrap.layered_runtime.layers[0].static_layer;

test('layered_runtime: Istio\'s static layer, then an admin layer; runtimeValues laid over the defaults as Istio lays them', async () => {
  const cases: { name: string; runtimeValues?: Record<string, string>; expect: Record<string, unknown> }[] = [
    { name: 'defaults', expect: { 're2.max_program_size.error_level': '32768', 'envoy.reloadable_features.http_reject_path_with_fragment': false } },
    {
      name: 'a string stays a string',
      runtimeValues: { 're2.max_program_size.error_level': '65536', 'x.y': '5' },
      expect: { 're2.max_program_size.error_level': '65536', 'x.y': '5' },
    },
    { name: 'true/false become booleans', runtimeValues: { 'feature.a': 'true', 'feature.b': 'false' }, expect: { 'feature.a': true, 'feature.b': false } },
    { name: '"" removes a default', runtimeValues: { 're2.max_program_size.error_level': '' }, expect: { 're2.max_program_size.error_level': undefined } },
  ];
  for (const { name, runtimeValues, expect } of cases) {
    const bootstrap = await rendered(runtimeValues ? { runtimeValues } : {});
    assert.deepEqual(bootstrap.layered_runtime.layers.map((layer: any) => layer.name), ['global config', 'admin'], name);
    assert.deepEqual(bootstrap.layered_runtime.layers[1].admin_layer, {}, name);
    for (const [key, value] of Object.entries(expect)) assert.equal(staticLayer(bootstrap)[key], value, `${name}: ${key}`);
  }
});

test('application_log_config: Istio\'s JSON format with --log_as_json, none without', async () => {
  const json = (await rendered({}, { logAsJson: true })).application_log_config.log_format.json_format;
  assert.deepEqual(json, { time: '%Y-%m-%dT%T.%fZ', level: '%l', scope: 'envoy %n', msg: '%j', caller: '%g:%#', thread: '%t' });
  assert.equal((await rendered()).application_log_config, undefined);
});

test('the Prometheus listener compresses (brotli, zstd, gzip before the router) unless statsCompression is false, and bypasses the overload manager', async () => {
  const filtersOf = (bootstrap: any) =>
    bootstrap.static_resources.listeners
      .find((listener: any) => listener.name === 'prometheus_stats')
      .filter_chains[0].filters[0].typed_config.http_filters.map((filter: any) => filter.name);
  const compressors = ['envoy.filters.http.compressor.brotli', 'envoy.filters.http.compressor.zstd', 'envoy.filters.http.compressor.gzip'];
  assert.deepEqual(filtersOf(await rendered()), [...compressors, 'envoy.filters.http.router']);
  assert.deepEqual(filtersOf(await rendered({ statsCompression: true })), [...compressors, 'envoy.filters.http.router']);
  assert.deepEqual(filtersOf(await rendered({ statsCompression: false })), ['envoy.filters.http.router']);
  for (const listener of (await rendered()).static_resources.listeners) {
    assert.deepEqual([listener.name, listener.ignore_global_conn_limit, listener.bypass_overload_manager], [listener.name, true, true]);
  }
});

test('the global downstream connection limit: connectionSettings, then proxyMetadata, then the env, then the runtime key; int32 max otherwise', async () => {
  const key = 'ISTIO_META_GLOBAL_DOWNSTREAM_MAX_CONNECTIONS';
  const cases: { name: string; proxyConfig: Record<string, unknown>; env?: Record<string, string>; limit: number }[] = [
    { name: 'nothing set', proxyConfig: {}, limit: 2147483647 },
    { name: 'connectionSettings', proxyConfig: { connectionSettings: { globalDownstreamConnectionLimit: 100 }, proxyMetadata: { [key]: '7' } }, limit: 100 },
    {
      name: 'connectionSettings 0 is unset (Istio)',
      proxyConfig: { connectionSettings: { globalDownstreamConnectionLimit: 0 }, proxyMetadata: { [key]: '7' } },
      limit: 7,
    },
    { name: 'proxyMetadata over env', proxyConfig: { proxyMetadata: { [key]: '7' } }, env: { [key]: '9' }, limit: 7 },
    { name: 'env', proxyConfig: {}, env: { [key]: '9' }, limit: 9 },
    { name: 'deprecated runtime key', proxyConfig: { runtimeValues: { 'overload.global_downstream_max_connections': '11' } }, limit: 11 },
  ];
  for (const { name, proxyConfig, env, limit } of cases) {
    const monitor = (await rendered(proxyConfig, { env })).overload_manager.resource_monitors[0];
    assert.equal(monitor.name, 'envoy.resource_monitors.global_downstream_max_connections', name);
    assert.equal(monitor.typed_config.max_active_downstream_connections, limit, name);
  }
});

test('bad values name the setting', async () => {
  const cases: [Record<string, unknown>, Record<string, string>, RegExp][] = [
    [
      { connectionSettings: { globalDownstreamConnectionLimit: -5 } },
      {},
      /env PROXY_CONFIG: field connectionSettings\.globalDownstreamConnectionLimit: -5 is not a connection limit/,
    ],
    [
      { proxyMetadata: { ISTIO_META_GLOBAL_DOWNSTREAM_MAX_CONNECTIONS: 'many' } },
      {},
      /field proxyMetadata\.ISTIO_META_GLOBAL_DOWNSTREAM_MAX_CONNECTIONS: "many"/,
    ],
    [{}, { ISTIO_META_GLOBAL_DOWNSTREAM_MAX_CONNECTIONS: '0' }, /^env ISTIO_META_GLOBAL_DOWNSTREAM_MAX_CONNECTIONS: "0"/],
    [{ runtimeValues: { a: 1 } }, {}, /env PROXY_CONFIG: field runtimeValues must be an object of strings/],
  ];
  for (const [proxyConfig, env, message] of cases) {
    await assert.rejects(rendered(proxyConfig, { env }), (error: Error) => (error as { code?: string }).code === 'BAD_ENV' && message.test(error.message));
  }
});
