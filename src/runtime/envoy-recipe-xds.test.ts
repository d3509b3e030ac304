import assert from 'node:assert/strict';
import { once } from 'node:events';
import { rm } from 'node:fs/promises';
import { connect, createServer, type Socket } from 'node:net';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { recipeSetup, writeCerts } from '../../test/support/envoy-recipe.ts';
import { rawAdsCall, startScriptedUpstream } from '../../test/support/scripted-upstream.ts';
import { within } from '../../test/support/within.ts';
import { FakeProxy } from '../agent/fake-proxy.ts';
import { defaultExpiryMarginMs } from '../agent/restart-gate.ts';
import { caSettingsFromEnv } from '../ca/ca-settings.ts';
import { runEnvoyRecipe } from './envoy-recipe.ts';

type Setup = Awaited<ReturnType<typeof recipeSetup>>;

const deltaPath = '/envoy.service.discovery.v3.AggregatedDiscoveryService/DeltaAggregatedResources';
const sotwPath = '/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources';

/** A discovery server's port that only counts TCP connections (and drops them at the end). */
async function countingServer() {
  const sockets: Socket[] = [];
  const server = createServer((socket) => void sockets.push(socket.on('error', () => undefined)));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as { port: number }).port;
  return {
    port,
    /** How many connections came before one the test opens now (dials already under way come first). */
    before: async () => {
      const probe = connect(port, '127.0.0.1');
      await once(probe, 'connect');
      const local = probe.localPort;
      while (!sockets.some((socket) => socket.remotePort === local)) await once(server, 'connection');
      probe.destroy();
      return sockets.findIndex((socket) => socket.remotePort === local);
    },
    close: () => (sockets.forEach((socket) => socket.destroy()), new Promise((resolve) => server.close(resolve))),
  };
}

/** The recipe's inputs with the discovery server on `port`. */
const upstreamAt = (inputs: Setup['inputs'], port: number) => ({ ...inputs.upstream, address: { host: '127.0.0.1', port } });

/** Envoy's side of one ADS call: an empty request sent; resolves when the relay ends the call. */
function adsCall(socketPath: string) {
  const { session, stream } = rawAdsCall(socketPath);
  stream.resume().write(Buffer.alloc(5));
  return once(stream, 'end').finally(() => session.destroy());
}

/**
 * The discovery server answers one call, then goes away (a new Envoy would get no config),
 * and new certificate files (expiring at `notAfter`) are read: a rotation the restart gate holds.
 */
async function holdRotation(setup: Setup, upstream: { close(): Promise<void> }, requestRelayed: Promise<void>, notAfter: number) {
  const { ctx, inputs, logs, clock } = setup;
  const first = adsCall(inputs.sockets.xds);
  await within(requestRelayed, 5000, 'a request relayed upstream');
  await upstream.close();
  await within(first, 5000, 'the first call ended');
  await within(adsCall(inputs.sockets.xds), 5000, 'a call whose dial fails');
  await writeCerts(ctx.config.certDir, notAfter);
  clock.advance(ctx.config.certResyncMs);
  await within(logs.waitFor('certificate files changed', 2), 5000, 'the new files read');
  await new Promise(setImmediate);
}

/**
 * Certificate files valid for an hour, a discovery server that tells each relayed request, and
 * the recipe running on them with epoch 0 LIVE.
 */
async function liveWithCerts(setup: Setup, opened: { close(): unknown }[]) {
  const { ctx, inputs, clock } = setup;
  const notAfter = clock.now() + 3_600_000;
  await writeCerts(ctx.config.certDir, notAfter);
  let relayed!: () => void;
  const requestRelayed = new Promise<void>((resolve) => (relayed = resolve));
  const upstream = await startScriptedUpstream((stream) => stream.on('data', () => relayed()));
  opened.push(upstream);
  const proxy = new FakeProxy();
  const run = runEnvoyRecipe(ctx, { ...inputs, upstream: upstreamAt(inputs, upstream.port), proxy });
  await within(ctx.events.envoySpawned.first(), 5000, 'epoch 0 spawned');
  proxy.live(0);
  return { notAfter, upstream, requestRelayed, proxy, run };
}

describe('the envoy recipe and the discovery server (FakeProxy, fake clock)', () => {
  let setup: Setup;
  /** Servers and calls a test opened, closed also when it fails. */
  let opened: { close(): unknown }[];

  beforeEach(async () => {
    setup = await recipeSetup();
    opened = [];
  });

  afterEach(async () => {
    await Promise.all(setup.guard.stops.map((stop) => stop()));
    await Promise.all(opened.map((entry) => entry.close()));
    await rm(setup.dir, { recursive: true, force: true });
  });

  for (const [name, customConfigFile, dials] of [
    ['the relay dials the discovery server as Envoy spawns', undefined, 1],
    ['a custom bootstrap (which may not use the relay) is not dialled for', '/etc/envoy/custom.yaml', 0],
  ] as const) {
    it(name, async () => {
      const { ctx, inputs, guard } = setup;
      const upstream = await countingServer();
      opened.push(upstream);
      ctx.config = { ...ctx.config, customConfigFile };
      const run = runEnvoyRecipe(ctx, { ...inputs, upstream: upstreamAt(inputs, upstream.port), proxy: new FakeProxy() });
      await within(ctx.events.envoySpawned.first(), 5000, 'epoch 0 spawned');
      await new Promise(setImmediate);
      assert.equal(await within(upstream.before(), 5000, 'the probe connection'), dials);
      await guard.stops[0]!();
      assert.equal(await run, 0);
    });
  }

  for (const [deltaXds, path] of [[true, deltaPath], [false, sotwPath]] as const) {
    it(`each later epoch's spawn dials again ahead of its Envoy (a hot restart's new Envoy opens its own stream), deltaXds ${deltaXds}`, async () => {
      const { ctx, inputs, guard } = setup;
      ctx.config = { ...ctx.config, deltaXds };
      const calls: string[] = [];
      let called = () => undefined as void;
      const upstream = await startScriptedUpstream((_stream, headers) => (calls.push(String(headers[':path'])), called()));
      opened.push(upstream);
      const nextCall = () => new Promise<void>((resolve) => (called = resolve));
      const first = nextCall();
      const run = runEnvoyRecipe(ctx, { ...inputs, upstream: upstreamAt(inputs, upstream.port), proxy: new FakeProxy() });
      await within(ctx.events.envoySpawned.first(), 5000, 'epoch 0 spawned');
      await within(first, 5000, "the dial for epoch 0's Envoy");
      const second = nextCall();
      ctx.events.envoySpawned.emit({ epoch: 1, pid: 100_001 });
      await within(second, 5000, "the dial for epoch 1's Envoy");
      assert.deepEqual(calls, Array(2).fill(path), 'the dials are for the flavour Envoy asks for');
      await guard.stops[0]!();
      assert.equal(await run, 0);
    });
  }

  it('serves the dir certificates over SDS; holds a rotation while the discovery server is away, until the running one nears expiry', async () => {
    const { ctx, guard, clock } = setup;
    const { notAfter, upstream, requestRelayed, proxy, run } = await liveWithCerts(setup, opened);
    const expiry = /^istio_agent_cert_expiry_seconds\{resource_name="default"\} 3600$/m;
    assert.match(await ctx.registry.metrics(), expiry, 'no CA: the files are the workload identity');
    await holdRotation(setup, upstream, requestRelayed, notAfter + 3_600_000);
    assert.deepEqual(proxy.running, [0], 'the rotation waits');
    assert.match(await ctx.registry.metrics(), /^istio_agent_restart_held 1$/m);
    const spawned = new Promise((resolve) => ctx.events.envoySpawned.on(resolve));
    clock.advance(notAfter - defaultExpiryMarginMs - clock.now());
    assert.deepEqual(await within(spawned, 5000, 'epoch 1 spawned'), { epoch: 1, pid: 100_001 }, 'an expiring certificate is worse than no config');
    assert.match(await ctx.registry.metrics(), /^istio_agent_cert_reloads_total 1$/m);
    await guard.stops[0]!();
    assert.equal(await run, 0);
  });

  it('with a CA, the files in the certificate dir are not the workload identity', async () => {
    const { ctx, inputs, guard, clock } = setup;
    await writeCerts(ctx.config.certDir, clock.now() + 3_600_000);
    const env = { CA_ADDR: '127.0.0.1:9', POD_NAMESPACE: 'ns', SERVICE_ACCOUNT: 'app', ECC_SIGNATURE_ALGORITHM: 'ECDSA' };
    const caSettings = caSettingsFromEnv({ env, tokenFile: undefined, certFilesMounted: false });
    const run = runEnvoyRecipe(ctx, { ...inputs, caSettings, proxy: new FakeProxy() });
    await within(ctx.events.envoySpawned.first(), 5000, 'epoch 0 spawned');
    assert.doesNotMatch(await ctx.registry.metrics(), /^istio_agent_cert_expiry_seconds\{resource_name="default"\}/m);
    await guard.stops[0]!();
    assert.equal(await run, 0);
  });

  it('a run stopped while a rotation is held leaves no timer behind (the gate waits for the expiry no longer)', async () => {
    const { guard, clock } = setup;
    const { notAfter, upstream, requestRelayed, run } = await liveWithCerts(setup, opened);
    await holdRotation(setup, upstream, requestRelayed, notAfter + 3_600_000);
    assert.ok(clock.pending > 0, 'the gate waits for the running certificate to near its expiry');
    await guard.stops[0]!();
    assert.equal(await run, 0);
    assert.equal(clock.pending, 0, 'no timer left');
  });

  it('a held rotation goes ahead once a call reaches the discovery server again', async () => {
    const { ctx, inputs, guard } = setup;
    const { notAfter, upstream, requestRelayed, proxy, run } = await liveWithCerts(setup, opened);
    await holdRotation(setup, upstream, requestRelayed, notAfter + 3_600_000);
    assert.deepEqual(proxy.running, [0], 'the rotation waits');
    const back = await startScriptedUpstream(() => undefined, upstream.port);
    opened.push(back);
    const spawned = new Promise((resolve) => ctx.events.envoySpawned.on(resolve));
    const { session } = rawAdsCall(inputs.sockets.xds);
    opened.push({ close: () => session.destroy() });
    assert.deepEqual(await within(spawned, 5000, 'epoch 1 spawned'), { epoch: 1, pid: 100_001 });
    await guard.stops[0]!();
    assert.equal(await run, 0);
  });
});
