import assert from 'node:assert/strict';
import { access, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { within } from '../../test/support/within.ts';
import { FakeProxy } from '../agent/fake-proxy.ts';
import { dnsEnv } from '../settings/dns-env.ts';
import { readEnvSettings } from '../settings/env-settings.ts';
import { mergeProxyConfigs } from '../settings/proxy-config-sources.ts';
import { resolveAgentConfig } from '../settings/resolve-agent-config.ts';
import { wasmEnv } from '../settings/wasm-env.ts';
import { FakeClock } from '../shared/clock.ts';
import { AgentError } from '../shared/errors.ts';
import { silentLogger } from '../shared/log.ts';
import { runtimeContext, type RuntimeContext } from './context.ts';
import { runEnvoyRecipe, type EnvoyRecipeInputs } from './envoy-recipe.ts';
import type { ProcessHooks } from './process-hooks.ts';

/** The process guard's two hooks, held by the test instead of the process. */
class FakeGuard implements ProcessHooks {
  terminate: ((signal: NodeJS.Signals) => void)[] = [];
  stops: (() => Promise<void>)[] = [];
  onTerminate(handler: (signal: NodeJS.Signals) => void) {
    this.terminate.push(handler);
    return () => void (this.terminate = this.terminate.filter((entry) => entry !== handler));
  }
  whileRunning(stop: () => Promise<void>) {
    this.stops.push(stop);
    return () => void (this.stops = this.stops.filter((entry) => entry !== stop));
  }
}

const exists = (path: string) => access(path).then(() => true, () => false);

describe('the envoy recipe, in process (FakeProxy, fake clock)', () => {
  let dir: string;
  let ctx: RuntimeContext;
  let guard: FakeGuard;
  let inputs: EnvoyRecipeInputs;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'envoy-recipe-'));
    const { config } = resolveAgentConfig({
      proxyType: 'sidecar',
      commandLine: { values: {}, sourceOf: () => 'default' },
      proxyConfig: mergeProxyConfigs([]),
      env: {},
    });
    ctx = runtimeContext(
      { ...config, configPath: dir, certDir: join(dir, 'certs'), sdsSocket: join(dir, 'SDS'), statusPort: 0 },
      silentLogger,
      new FakeClock(1_000_000),
    );
    guard = new FakeGuard();
    inputs = {
      bootstrap: { nodeId: 'sidecar~198.18.0.7~app.ns~ns.svc.cluster.local', metadata: {} as never, text: '{}', domain: 'ns.svc.cluster.local' },
      launch: { localAddressIpVersion: 'v4' }, sockets: { xds: join(dir, 'XDS'), readiness: join(dir, 'READINESS') },
      upstream: { address: { host: '127.0.0.1', port: 9 }, policy: 'NONE', certDir: join(dir, 'certs') },
      caSettings: undefined, app: undefined, grpcBootstrapPath: undefined,
      dns: { settings: readEnvSettings({}, dnsEnv), namespace: 'ns' }, wasm: readEnvSettings({}, wasmEnv), guard,
    };
  });

  afterEach(async () => {
    // A failed assertion may leave the run going: the fault path stops it.
    await Promise.all(guard.stops.map((stop) => stop()));
    await rm(dir, { recursive: true, force: true });
  });

  it('starts every part before epoch 0, drains on SIGTERM, exits 0 and undoes every part', async () => {
    const proxy = new FakeProxy();
    const run = runEnvoyRecipe(ctx, { ...inputs, proxy });
    const spawned = await within(ctx.events.envoySpawned.first(), 5000, 'epoch 0 spawned');
    assert.deepEqual(spawned, { epoch: 0, pid: 100_000 });
    assert.ok(await exists(join(dir, 'XDS')), 'the relay listens before Envoy starts');
    assert.ok(await exists(join(dir, 'SDS')), 'SDS serves before Envoy starts');
    assert.equal(guard.terminate.length, 1, 'signals reach the loop while it runs');
    proxy.live(0);
    guard.terminate[0]!('SIGTERM');
    await new Promise(setImmediate);
    assert.deepEqual([proxy.drains, proxy.running], [[false], [0]], 'Envoy serves while it drains');
    (ctx.clock as FakeClock).advance(ctx.config.terminationDrainDurationMs);
    assert.equal(await within(run, 5000, 'the recipe to end'), 0);
    assert.deepEqual(proxy.running, []);
    assert.deepEqual([await exists(join(dir, 'XDS')), await exists(join(dir, 'SDS'))], [false, false], 'sockets removed');
    assert.deepEqual([guard.terminate.length, guard.stops.length], [0, 0], 'hooks undone');
    await within(ctx.events.stopped.first(), 1000, 'stopped told');
  });

  it('a second signal cuts the drain short; the state gauges and event counters are on the registry', async () => {
    const proxy = new FakeProxy();
    const run = runEnvoyRecipe(ctx, { ...inputs, proxy });
    await within(ctx.events.envoySpawned.first(), 5000, 'epoch 0 spawned');
    proxy.live(0);
    const metrics = await ctx.registry.metrics();
    assert.match(metrics, /^istio_agent_live_epochs 1$/m);
    assert.match(metrics, /^istio_agent_epochs_started_total 1$/m);
    guard.terminate[0]!('SIGTERM');
    guard.terminate[0]!('SIGTERM');
    assert.equal(await within(run, 5000, 'the recipe to end before the drain duration'), 0);
    assert.deepEqual(proxy.running, []);
  });

  it('a fault stops Envoy without a drain and resolves only once every part is stopped', async () => {
    const proxy = new FakeProxy();
    const run = runEnvoyRecipe(ctx, { ...inputs, proxy });
    await within(ctx.events.envoySpawned.first(), 5000, 'epoch 0 spawned');
    let stopped = false;
    ctx.events.stopped.on(() => (stopped = true));
    await within(guard.stops[0]!(), 5000, 'the fault stop');
    assert.equal(stopped, true, 'the fault stop waited for the whole stack');
    assert.equal(await run, 0);
    assert.deepEqual(proxy.running, []);
  });

  it('Envoy rejecting its config with nothing else running is ENVOY_REJECTED, after every part stopped', async () => {
    const proxy = new FakeProxy();
    const run = runEnvoyRecipe(ctx, { ...inputs, proxy });
    await within(ctx.events.envoySpawned.first(), 5000, 'epoch 0 spawned');
    proxy.exit(0, 'rejected', 'cannot bind 0.0.0.0:15001');
    await assert.rejects(
      within(run, 5000, 'the recipe to end'),
      (error: unknown) => error instanceof AgentError && error.code === 'ENVOY_REJECTED' && error.message === 'cannot bind 0.0.0.0:15001',
    );
    assert.equal(await exists(join(dir, 'XDS')), false);
  });

  it('a spent retry budget is RETRY_BUDGET_SPENT, exit 1 by errors.ts', async () => {
    ctx.config = { ...ctx.config, retryBudget: 0 };
    const proxy = new FakeProxy();
    const run = runEnvoyRecipe(ctx, { ...inputs, proxy });
    await within(ctx.events.envoySpawned.first(), 5000, 'epoch 0 spawned');
    proxy.exit(0, 'failed', 'exit code 1: boom');
    await assert.rejects(
      within(run, 5000, 'the recipe to end'),
      (error: unknown) =>
        error instanceof AgentError && error.code === 'RETRY_BUDGET_SPENT' && error.exitCode === 1 && /exit code 1: boom$/.test(error.message),
    );
  });
});
