import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdir, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect as connectHttp2 } from 'node:http2';
import { connect as connectSocket } from 'node:net';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { recipeSetup, writeCerts } from '../../test/support/envoy-recipe.ts';
import { startScriptedUpstream } from '../../test/support/scripted-upstream.ts';
import { waitUntil } from '../../test/support/poll.ts';
import { freePort } from '../../test/support/ports.ts';
import { within } from '../../test/support/within.ts';
import { FakeProxy } from '../agent/fake-proxy.ts';
import { readEnvSettings } from '../settings/env-settings.ts';
import { wasmEnv } from '../settings/wasm-env.ts';
import { FakeClock } from '../shared/clock.ts';
import { adsMethods } from '../xds/relay/relay.ts';
import { runEnvoyRecipe } from './envoy-recipe.ts';

type Setup = Awaited<ReturnType<typeof recipeSetup>>;

/** A FakeProxy that takes a new bootstrap, as EnvoyProxy does for the SotW fallback. */
class SwitchingProxy extends FakeProxy {
  readonly bootstraps: string[] = [];
  useBootstrap(text: string): void {
    this.bootstraps.push(text);
  }
}

/** Envoy's side of a Delta ADS call on the relay's socket: one empty request; resolves when the relay ends the call. */
function deltaCall(socketPath: string): Promise<void> {
  const session = connectHttp2('http://localhost', { createConnection: () => connectSocket(socketPath) });
  session.on('error', () => undefined);
  const stream = session.request({ ':method': 'POST', ':path': adsMethods.delta, 'content-type': 'application/grpc', te: 'trailers' });
  stream.on('error', () => undefined);
  stream.resume().write(Buffer.alloc(5));
  return once(stream, 'end').then(() => undefined).finally(() => session.destroy());
}

describe("the envoy recipe's parts and their wiring (FakeProxy, fake clock)", () => {
  let setup: Setup;
  let opened: { close(): unknown }[];

  beforeEach(async () => {
    setup = await recipeSetup(new FakeClock(Date.now()));
    opened = [];
  });

  afterEach(async () => {
    await Promise.all(setup.guard.stops.map((stop) => stop()));
    await Promise.all(opened.map((entry) => entry.close()));
    await rm(setup.dir, { recursive: true, force: true });
  });

  /** A discovery server without Delta xDS (every call answered UNIMPLEMENTED), Envoy's Delta call relayed to it. */
  async function deltaRefused(renderSotw: (() => Promise<string>) | undefined) {
    const { ctx, inputs } = setup;
    await writeCerts(ctx.config.certDir, ctx.clock.now() + 3_600_000);
    const upstream = await startScriptedUpstream((stream) => stream.respond({ ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '12' }, { endStream: true }));
    opened.push(upstream);
    const proxy = new SwitchingProxy();
    const bootstrap = { ...inputs.bootstrap, renderSotw };
    const run = runEnvoyRecipe(ctx, { ...inputs, bootstrap, upstream: { ...inputs.upstream, address: { host: '127.0.0.1', port: upstream.port } }, proxy });
    await within(ctx.events.envoySpawned.first(), 5000, 'epoch 0 spawned');
    proxy.live(0);
    await within(deltaCall(inputs.sockets.xds), 5000, 'the Delta call answered');
    return { proxy, run };
  }

  it('a discovery server without Delta xDS: the next epoch runs the SotW bootstrap the plan renders', async () => {
    const { proxy, run } = await deltaRefused(async () => '{"sotw": true}');
    const switching = 'the discovery server does not implement Delta xDS (UNIMPLEMENTED): restarting Envoy with State of the World xDS';
    await within(setup.logs.waitFor(switching), 5000, 'the switch');
    await waitUntil('the epoch after the switch', () => proxy.starts.length === 2, 5000);
    assert.deepEqual(proxy.bootstraps, ['{"sotw": true}']);
    assert.match(proxy.starts[1]!.config, /\+sotw$/, "the next epoch's config is marked SotW");
    await setup.guard.stops[0]!();
    assert.equal(await run, 0);
  });

  it('without a SotW bootstrap to switch to (a custom one), the agent stays on Delta', async () => {
    const { proxy, run } = await deltaRefused(undefined);
    await new Promise(setImmediate);
    assert.deepEqual(proxy.bootstraps, []);
    assert.equal(setup.logs.lines.some((line) => /restarting Envoy with/.test(line.msg)), false);
    await setup.guard.stops[0]!();
    assert.equal(await run, 0);
  });

  it('the status server logs as status, and asks Envoy admin on the host the config names (::1)', async () => {
    const { ctx, inputs, logs } = setup;
    const asked: string[] = [];
    const admin = createServer((request, response) => (asked.push(request.url ?? ''), response.writeHead(503).end('PRE_INITIALIZING\n')));
    await new Promise<void>((resolve) => admin.listen(0, '::1', resolve));
    opened.push({ close: () => (admin.closeAllConnections(), admin.close()) });
    const statusPort = await freePort();
    ctx.config = { ...ctx.config, statusPort, proxyAdminHost: '::1', proxyAdminPort: (admin.address() as AddressInfo).port };
    const run = runEnvoyRecipe(ctx, { ...inputs, proxy: new FakeProxy() });
    assert.equal((await within(logs.waitFor('status server listening'), 5000, 'the status server')).component, 'status');
    await within(ctx.events.envoySpawned.first(), 5000, 'epoch 0 spawned');
    const response = await fetch(`http://127.0.0.1:${statusPort}/healthz/ready`);
    assert.equal(response.status, 503);
    assert.ok(asked.length > 0, 'readiness asked the admin listening on ::1');
    await setup.guard.stops[0]!();
    assert.equal(await run, 0);
  });

  it('a gRPC bootstrap beside Envoy without a CA names no certificate output', async () => {
    const { ctx, inputs } = setup;
    const grpcBootstrapPath = join(setup.dir, 'grpc-bootstrap.json');
    const run = runEnvoyRecipe(ctx, { ...inputs, grpcBootstrapPath, proxy: new FakeProxy() });
    await within(ctx.events.envoySpawned.first(), 5000, 'epoch 0 spawned');
    const written = JSON.parse(await readFile(grpcBootstrapPath, 'utf8'));
    assert.equal(written.node.id, inputs.bootstrap.nodeId);
    await setup.guard.stops[0]!();
    assert.equal(await run, 0);
  });

  it("a readinessProbe without a CA: the health verdict is Envoy's readiness alone", async () => {
    const { ctx, inputs, logs } = setup;
    const action = { kind: 'exec' as const, command: ['true'], timeoutMs: 1000 };
    const probe = { action, initialDelayMs: 0, periodMs: 1000, successThreshold: 1, failureThreshold: 1 };
    const health = { probe, network: { destination: '127.0.0.1', localAddress: '127.0.0.1', http2: false, keepAlive: false } };
    const run = runEnvoyRecipe(ctx, { ...inputs, health, proxy: new FakeProxy() });
    await within(ctx.events.envoySpawned.first(), 5000, 'epoch 0 spawned');
    await within(logs.waitFor('workload health checks start'), 5000, 'the health part started');
    (ctx.clock as FakeClock).advance(0);
    const unhealthy = await within(logs.waitFor('workload unhealthy: failure threshold reached'), 5000, 'the first verdict');
    assert.match(String(unhealthy.reason), /^Envoy is not ready: /);
    assert.doesNotMatch(String(unhealthy.reason), /certificate/);
    await setup.guard.stops[0]!();
    assert.equal(await run, 0);
  });

  it("the Wasm loader's module cache logs as wasm (an expired module removed at the purge)", async () => {
    const { ctx, inputs, logs } = setup;
    const cacheDir = join(setup.dir, 'wasm');
    const module = join(cacheDir, 'some-digest', 'module.wasm');
    await mkdir(join(cacheDir, 'some-digest'), { recursive: true });
    await writeFile(module, Buffer.from([0, 0x61, 0x73, 0x6d]));
    const old = new Date(ctx.clock.now() - 3 * 86_400_000);
    await utimes(module, old, old);
    const wasm = readEnvSettings({ WASM_CACHE_DIR: cacheDir }, wasmEnv);
    const run = runEnvoyRecipe(ctx, { ...inputs, wasm, proxy: new FakeProxy() });
    await within(ctx.events.envoySpawned.first(), 5000, 'epoch 0 spawned');
    (ctx.clock as FakeClock).advance(wasm.purgeIntervalMs);
    const removed = await within(logs.waitFor('expired Wasm module removed'), 5000, 'the purge');
    assert.deepEqual([removed.component, removed.path], ['wasm', module]);
    await setup.guard.stops[0]!();
    assert.equal(await run, 0);
  });
});
