/**
 * The parts of Istio's bootstrap that ProxyConfig drives, checked on the real
 * Envoy: the runtime layers (a route regex istiod accepts must load), the
 * overload manager's connection limit, and the compressor on Envoy's
 * Prometheus listener.
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { get, type IncomingHttpHeaders } from 'node:http';
import { gunzipSync } from 'node:zlib';
import { describe, it } from 'node:test';
import { execa } from 'execa';
import { assertBundleFresh } from '../support/bundle-fresh.ts';
import { deferStop, tempDir } from '../support/cleanup.ts';
import { startAgent } from '../support/agent.ts';
import { agentBin, envoyBin, nodeBin } from '../support/paths.ts';
import { startPeer } from '../support/peer.ts';
import { freePort } from '../support/ports.ts';
import { simpleHttpService } from '../support/resources.ts';
import { epochLive } from './reconcile-support.ts';

type Json = Record<string, unknown>;

async function printBootstrap(env: Record<string, string> = {}): Promise<Json> {
  assertBundleFresh();
  const args = ['proxy', 'sidecar', '--serviceregistry', 'Other', '--ip', '127.0.0.1', '--discoveryAddress', '127.0.0.1:15010', '--print-bootstrap'];
  const result = await execa(nodeBin, [agentBin, ...args], { env, extendEnv: false, timeout: 30_000 });
  return JSON.parse(result.stdout) as Json;
}

/** A static listener whose route regex compiles past Envoy's default program size (100), as istiod may send. */
function withLargeRegexRoute(bootstrap: Json): Json {
  const regex = Array.from({ length: 40 }, (_, i) => `/v${i}/[a-z]+/(items|orders)/[0-9]{1,8}`).join('|');
  const listener = {
    name: 'large_regex', address: { socket_address: { address: '127.0.0.1', port_value: 0 } },
    filter_chains: [{ filters: [{ name: 'envoy.filters.network.http_connection_manager', typed_config: {
      '@type': 'type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager', stat_prefix: 'large_regex',
      route_config: { virtual_hosts: [{ name: 'v', domains: ['*'], routes: [{ match: { safe_regex: { regex } }, direct_response: { status: 200 } }] }] },
      http_filters: [{ name: 'envoy.filters.http.router', typed_config: { '@type': 'type.googleapis.com/envoy.extensions.filters.http.router.v3.Router' } }],
    } }] }],
  };
  const resources = bootstrap.static_resources as { listeners: unknown[] };
  return { ...bootstrap, static_resources: { ...resources, listeners: [...resources.listeners, listener] } };
}

async function validates(bootstrap: Json, dir: string): Promise<{ ok: boolean; output: string }> {
  const path = join(dir, `bootstrap-${Math.random().toString(36).slice(2)}.json`);
  await writeFile(path, JSON.stringify(bootstrap));
  const result = await execa(envoyBin, ['--mode', 'validate', '-c', path], { reject: false, timeout: 60_000 });
  return { ok: result.exitCode === 0, output: `${result.stdout}\n${result.stderr}` };
}

function rawGet(url: string, headers: Record<string, string>): Promise<{ status: number; headers: IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    get(url, { headers, timeout: 10_000 }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks) }));
    }).on('error', reject);
  });
}

describe("Istio's bootstrap parts from ProxyConfig, on the real Envoy", () => {
  it("a route regex past Envoy's default program size loads with Istio's runtime layer, and is refused without it", { timeout: 60_000 }, async () => {
    await using cleanup = new AsyncDisposableStack();
    const dir = await tempDir(cleanup, 'bootstrap-parts-');
    const ours = withLargeRegexRoute(await printBootstrap());
    const layers = (ours.layered_runtime as { layers: { name: string }[] }).layers;
    assert.deepEqual(layers.map((layer) => layer.name), ['global config', 'admin']);
    const accepted = await validates(ours, dir);
    assert.ok(accepted.ok, accepted.output);
    const refused = await validates({ ...ours, layered_runtime: undefined }, dir);
    assert.equal(refused.ok, false, 'without the runtime layer Envoy refuses the regex (so the test shows something)');
    assert.match(refused.output, /program size/i);
  });

  it('the overload manager takes ISTIO_META_GLOBAL_DOWNSTREAM_MAX_CONNECTIONS, and runtimeValues reach the static layer', async () => {
    const bootstrap = await printBootstrap({ ISTIO_META_GLOBAL_DOWNSTREAM_MAX_CONNECTIONS: '1234', PROXY_CONFIG: JSON.stringify({ runtimeValues: { 'test.key': 'on' } }) });
    const monitor = (bootstrap.overload_manager as { resource_monitors: { typed_config: Json }[] }).resource_monitors[0]!;
    assert.equal(monitor.typed_config.max_active_downstream_connections, 1234);
    const [global] = (bootstrap.layered_runtime as { layers: { static_layer: Json }[] }).layers;
    assert.equal(global!.static_layer['test.key'], 'on');
  });

  it("Envoy's Prometheus listener answers gzip when asked, and the admin runtime shows Istio's layer", { timeout: 60_000 }, async () => {
    await using cleanup = new AsyncDisposableStack();
    const prometheusPort = await freePort();
    const peer = await startPeer(simpleHttpService({ listenerPort: await freePort(), upstreamPort: await freePort() }));
    cleanup.defer(() => peer.stop());
    const agent = await startAgent({ discoveryAddress: peer.address, args: ['--prometheusPort', String(prometheusPort)] });
    deferStop(cleanup, agent);
    await epochLive(agent, 0);
    // node:http, not fetch: fetch inflates by itself and hides the encoding.
    const response = await rawGet(`http://127.0.0.1:${prometheusPort}/stats/prometheus`, { 'accept-encoding': 'gzip' });
    assert.equal(response.status, 200);
    assert.equal(response.headers['content-encoding'], 'gzip');
    assert.match(gunzipSync(response.body).toString('utf8'), /^# TYPE envoy_/m);
    const runtime = (await (await fetch(`http://127.0.0.1:${agent.adminPort}/runtime`)).json()) as { layers: string[]; entries: Record<string, { final_value: string }> };
    assert.deepEqual(runtime.layers, ['global config', 'admin']);
    assert.equal(runtime.entries['re2.max_program_size.error_level']?.final_value, '32768');
  });
});
