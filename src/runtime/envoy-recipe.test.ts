import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { access, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { FakeGuard, recipeSetup, type LogCapture } from '../../test/support/envoy-recipe.ts';
import { freePort } from '../../test/support/ports.ts';
import { within } from '../../test/support/within.ts';
import { FakeProxy } from '../agent/fake-proxy.ts';
import { caSettingsFromEnv } from '../ca/ca-settings.ts';
import { dnsEnv } from '../settings/dns-env.ts';
import { readEnvSettings } from '../settings/env-settings.ts';
import { wasmEnv } from '../settings/wasm-env.ts';
import type { FakeClock } from '../shared/clock.ts';
import { AgentError } from '../shared/errors.ts';
import type { RuntimeContext } from './context.ts';
import { runEnvoyRecipe, type EnvoyRecipeInputs } from './envoy-recipe.ts';

const exists = (path: string) => access(path).then(() => true, () => false);

describe('the envoy recipe, in process (FakeProxy, fake clock)', () => {
  let dir: string;
  let ctx: RuntimeContext;
  let guard: FakeGuard;
  let inputs: EnvoyRecipeInputs;
  let logs: LogCapture;

  beforeEach(async () => {
    ({ dir, ctx, guard, inputs, logs } = await recipeSetup());
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
    assert.match(proxy.starts[0]!.config, /^[0-9a-f]{64}$/, "epoch 0 runs the certificate set's hash, unmarked (no SotW fallback yet)");
    assert.ok(await exists(join(dir, 'XDS')), 'the relay listens before Envoy starts');
    assert.ok(await exists(join(dir, 'SDS')), 'SDS serves before Envoy starts');
    assert.equal(guard.terminate.length, 1, 'signals reach the loop while it runs');
    assert.equal(logs.lines.find((line) => line.msg === 'starting epoch')?.component, 'agent', 'the loop logs as the agent');
    proxy.live(0);
    guard.terminate[0]!('SIGTERM');
    assert.equal(logs.lines.find((line) => line.msg === 'signal received')?.signal, 'SIGTERM');
    await new Promise(setImmediate);
    assert.deepEqual([proxy.drains, proxy.running], [[false], [0]], 'Envoy serves while it drains');
    (ctx.clock as FakeClock).advance(ctx.config.terminationDrainDurationMs - 1);
    await new Promise(setImmediate);
    assert.deepEqual(proxy.running, [0], 'Envoy serves until the whole drain duration has passed');
    (ctx.clock as FakeClock).advance(1);
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
    assert.match(metrics, /^istio_agent_retry_budget 10$/m);
    assert.match(metrics, /^istio_agent_restart_held 0$/m);
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
    // What is left when `stopped` is told: the process exits 1 right after it.
    let leftWhenStopped: boolean[] | undefined;
    ctx.events.stopped.on(() => (leftWhenStopped = [existsSync(join(dir, 'SDS')), existsSync(join(dir, 'XDS'))]));
    await within(guard.stops[0]!(), 5000, 'the fault stop');
    assert.deepEqual(leftWhenStopped, [false, false], 'the fault stop waited for the whole stack: the SDS and xDS sockets removed first');
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

  it('with DNS on, readiness says the name table has not arrived (no CA, the DNS part speaks)', async () => {
    const [statusPort, dnsPort] = [await freePort(), await freePort()];
    ctx.config = { ...ctx.config, statusPort };
    const dns = { ...inputs.dns, settings: readEnvSettings({ ISTIO_META_DNS_CAPTURE: 'true', DNS_PROXY_ADDR: `127.0.0.1:${dnsPort}` }, dnsEnv) };
    const run = runEnvoyRecipe(ctx, { ...inputs, dns, proxy: new FakeProxy() });
    await within(ctx.events.envoySpawned.first(), 5000, 'epoch 0 spawned');
    const response = await fetch(`http://127.0.0.1:${statusPort}/healthz/ready`);
    assert.equal(response.status, 503);
    assert.match(await response.text(), /the name table has not arrived yet/);
    await guard.stops[0]!();
    assert.equal(await run, 0);
  });

  it('without DNS, a CA or the Wasm loader, the recipe runs and readiness asks Envoy (no part to blame for a missing certificate)', async () => {
    ctx.config = { ...ctx.config, statusPort: await freePort(), proxyAdminPort: await freePort() };
    const wasm = readEnvSettings({ ISTIO_AGENT_ENABLE_WASM_REMOTE_LOAD_CONVERSION: 'false' }, wasmEnv);
    const run = runEnvoyRecipe(ctx, { ...inputs, wasm, proxy: new FakeProxy() });
    await within(ctx.events.envoySpawned.first(), 5000, 'epoch 0 spawned');
    const response = await fetch(`http://127.0.0.1:${ctx.config.statusPort}/healthz/ready`);
    assert.equal(response.status, 503);
    assert.match(await response.text(), /^not ready: Envoy admin /, "the answer is Envoy's, not a failed lookup of an absent part");
    await guard.stops[0]!();
    assert.equal(await run, 0);
  });

  it('with a gRPC bootstrap path, a proxyless app beside Envoy gets a bootstrap naming the relay, the node and the certificates', async () => {
    const grpcBootstrapPath = join(dir, 'grpc-bootstrap.json');
    const env = { CA_ADDR: '127.0.0.1:9', POD_NAMESPACE: 'ns', SERVICE_ACCOUNT: 'app', OUTPUT_CERTS: join(dir, 'out') };
    const caSettings = caSettingsFromEnv({ env, tokenFile: undefined, certFilesMounted: false });
    const bootstrap = { ...inputs.bootstrap, locality: { region: 'r1', zone: 'z1' } };
    const run = runEnvoyRecipe(ctx, { ...inputs, bootstrap, caSettings, grpcBootstrapPath, proxy: new FakeProxy() });
    await within(ctx.events.envoySpawned.first(), 5000, 'epoch 0 spawned');
    const written = JSON.parse(await readFile(grpcBootstrapPath, 'utf8'));
    assert.equal(written.node.id, inputs.bootstrap.nodeId);
    assert.equal(written.node.locality?.zone, 'z1');
    assert.match(JSON.stringify(written.xds_servers), /XDS/, 'the app reaches istiod through the relay');
    assert.match(JSON.stringify(written.certificate_providers), new RegExp(join(dir, 'out')), "the CA's OUTPUT_CERTS");
    await guard.stops[0]!();
    assert.equal(await run, 0);
  });

  it("with a readinessProbe, the workload health checks run and report Envoy's readiness first, a CA's missing certificate included", async () => {
    const env = { CA_ADDR: '127.0.0.1:9', POD_NAMESPACE: 'ns', SERVICE_ACCOUNT: 'app' };
    const caSettings = caSettingsFromEnv({ env, tokenFile: undefined, certFilesMounted: false });
    const action = { kind: 'exec' as const, command: ['true'], timeoutMs: 1000 };
    const probe = { action, initialDelayMs: 0, periodMs: 1000, successThreshold: 1, failureThreshold: 1 };
    const health = { probe, network: { destination: '127.0.0.1', localAddress: '127.0.0.1', http2: false, keepAlive: false } };
    const run = runEnvoyRecipe(ctx, { ...inputs, caSettings, health, proxy: new FakeProxy() });
    await within(ctx.events.envoySpawned.first(), 5000, 'epoch 0 spawned');
    assert.equal((await within(logs.waitFor('asking the CA for the workload certificate'), 5000, 'the CA client started')).ca, '127.0.0.1:9');
    assert.equal((await within(logs.waitFor('workload health checks start'), 5000, 'the health part started')).kind, 'exec');
    (ctx.clock as FakeClock).advance(0);
    const unhealthy = await within(logs.waitFor('workload unhealthy: failure threshold reached'), 5000, 'the first verdict');
    assert.equal(unhealthy.component, 'health');
    assert.match(String(unhealthy.reason), /^Envoy is not ready: no workload certificate yet/, "the CA's problem, through Envoy's readiness");
    await guard.stops[0]!();
    assert.equal(await run, 0);
  });
});
