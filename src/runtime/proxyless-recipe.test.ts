import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { AdsTestClient, sotwRequest } from '../../test/support/ads-client.ts';
import { FakeGuard, recipeSetup, type LogCapture } from '../../test/support/envoy-recipe.ts';
import { freePort } from '../../test/support/ports.ts';
import { within } from '../../test/support/within.ts';
import { caSettingsFromEnv } from '../ca/ca-settings.ts';
import type { RuntimeContext } from './context.ts';
import { runProxylessRecipe, type ProxylessInputs } from './proxyless-recipe.ts';

const node = 'sidecar~198.18.0.7~app.ns~ns.svc.cluster.local';
const cds = 'type.googleapis.com/envoy.config.cluster.v3.Cluster';

/** The guard's hooks, registered last: `hooked` resolves once the run has started every part; each undo notes what was up then. */
class StartedGuard extends FakeGuard {
  readonly undone: string[][] = [];
  readonly hooked: Promise<void>;
  readonly #up: () => string[];
  #hooked!: () => void;
  constructor(up: () => string[]) {
    super();
    this.#up = up;
    this.hooked = new Promise((resolve) => (this.#hooked = resolve));
  }
  override onTerminate(handler: (signal: NodeJS.Signals) => void) {
    const undo = super.onTerminate(handler);
    return () => (this.undone.push(this.#up()), undo());
  }
  override whileRunning(stop: () => Promise<void>) {
    const undo = super.whileRunning(stop);
    this.#hooked();
    return () => (this.undone.push(this.#up()), undo());
  }
}

describe('the proxyless recipe, in process (no Envoy: the relay, the bootstrap, the status server)', () => {
  let dir: string;
  let ctx: RuntimeContext;
  let guard: StartedGuard;
  let inputs: ProxylessInputs;
  let logs: LogCapture;
  let client: AdsTestClient | undefined;
  /** Which sockets are there now: the relay's and the status server's readiness socket. */
  const up = () => ['XDS', 'READINESS'].filter((name) => existsSync(join(dir, name)));

  beforeEach(async () => {
    const setup = await recipeSetup();
    ({ dir, ctx, logs } = setup);
    ctx.config = { ...ctx.config, statusPort: await freePort() };
    guard = new StartedGuard(up);
    inputs = {
      nodeId: node,
      metadata: { NAMESPACE: 'ns' },
      caSettings: undefined,
      upstream: setup.inputs.upstream,
      bootstrapPath: join(dir, 'grpc-bootstrap.json'),
      xdsSocketPath: join(dir, 'XDS'),
      readinessSocketPath: join(dir, 'READINESS'),
      guard,
    };
  });

  afterEach(async () => {
    client?.close();
    client = undefined;
    // A failed assertion may leave the run going: the fault path stops it.
    await Promise.all(guard.stops.map((stop) => stop()));
    await rm(dir, { recursive: true, force: true });
  });

  it('starts the relay, the bootstrap naming it, the status server, then the hooks; SIGTERM stops them in reverse order', async () => {
    const run = runProxylessRecipe(ctx, inputs);
    await within(guard.hooked, 5000, 'the hooks registered');
    assert.deepEqual(up(), ['XDS', 'READINESS'], 'the relay and the status server listen before the hooks');
    const bootstrap = JSON.parse(await readFile(inputs.bootstrapPath, 'utf8'));
    assert.equal(bootstrap.node.id, node);
    assert.match(JSON.stringify(bootstrap.xds_servers), /XDS/, 'the bootstrap names the relay');
    assert.equal((await fetch(`http://127.0.0.1:${ctx.config.statusPort}/healthz/ready`)).status, 200);
    // An app's stream stays open (the discovery server cannot be reached): the relay's stop ends it and says so.
    client = new AdsTestClient(`unix:${inputs.xdsSocketPath}`, { nodeId: node });
    client.send(sotwRequest({ typeUrl: cds, nodeId: node }));
    await within(logs.waitFor('Envoy opened an xDS stream'), 5000, 'the stream opened');
    const upWhenRelayStopped = logs.waitFor('xDS stream ended').then(() => up());
    let upWhenStopped: string[] | undefined;
    ctx.events.stopped.on(() => (upWhenStopped = up()));
    guard.terminate[0]!('SIGTERM');
    assert.equal(await within(run, 5000, 'the recipe to end'), 0);
    assert.deepEqual(guard.undone, [['XDS', 'READINESS'], ['XDS', 'READINESS']], 'the hooks are undone first, every part still up');
    assert.deepEqual(await upWhenRelayStopped, ['XDS'], 'the status server stopped before the relay');
    assert.deepEqual(upWhenStopped, [], '`stopped` is told last, every socket removed');
    assert.deepEqual([guard.terminate.length, guard.stops.length], [0, 0], 'hooks undone');
    const written = logs.lines.find((line) => line.msg === 'gRPC xDS bootstrap written; Envoy is disabled (proxyless gRPC)');
    assert.equal(written?.path, inputs.bootstrapPath, "the bootstrap's log line names where the app finds it");
    assert.deepEqual(logs.lines.find((line) => line.msg === 'signal received')?.signal, 'SIGTERM', 'the signal is logged by name');
  });

  it('POST /quitquitquit on the status server ends the run, for the reason quitquitquit', async () => {
    const run = runProxylessRecipe(ctx, inputs);
    await within(guard.hooked, 5000, 'the hooks registered');
    const reason = ctx.events.stopRequested.first();
    const response = await fetch(`http://127.0.0.1:${ctx.config.statusPort}/quitquitquit`, { method: 'POST' });
    assert.equal(response.status, 200);
    assert.equal(await within(reason, 5000, 'the stop asked for'), 'quitquitquit');
    assert.equal(await within(run, 5000, 'the recipe to end'), 0);
    assert.deepEqual(up(), [], 'every socket removed');
  });

  it('with --statusPort 0 there is no status server: no readiness socket', async () => {
    ctx.config = { ...ctx.config, statusPort: 0 };
    const run = runProxylessRecipe(ctx, inputs);
    await within(guard.hooked, 5000, 'the hooks registered');
    assert.deepEqual(up(), ['XDS'], 'the relay alone listens');
    guard.terminate[0]!('SIGTERM');
    assert.equal(await within(run, 5000, 'the recipe to end'), 0);
  });

  it('with a CA, the CA client starts, the bootstrap names its OUTPUT_CERTS, and readiness waits for its certificate', async () => {
    const env = { CA_ADDR: '127.0.0.1:9', POD_NAMESPACE: 'ns', SERVICE_ACCOUNT: 'app', OUTPUT_CERTS: join(dir, 'out') };
    const caSettings = caSettingsFromEnv({ env, tokenFile: undefined, certFilesMounted: false });
    const run = runProxylessRecipe(ctx, { ...inputs, caSettings });
    await within(guard.hooked, 5000, 'the hooks registered');
    assert.equal((await within(logs.waitFor('asking the CA for the workload certificate'), 5000, 'the CA client started')).ca, '127.0.0.1:9');
    const written = logs.lines.find((line) => line.msg === 'gRPC xDS bootstrap written; Envoy is disabled (proxyless gRPC)');
    assert.equal(written?.certificates, join(dir, 'out'), 'the log line says where the app reads its certificates');
    assert.match(await readFile(inputs.bootstrapPath, 'utf8'), new RegExp(join(dir, 'out')));
    assert.equal((await fetch(`http://127.0.0.1:${ctx.config.statusPort}/healthz/ready`)).status, 503, 'no certificate yet');
    guard.terminate[0]!('SIGTERM');
    assert.equal(await within(run, 5000, 'the recipe to end'), 0);
  });

  it("a fault's stop resolves only once every part is stopped: no xDS or readiness socket behind", async () => {
    const run = runProxylessRecipe(ctx, inputs);
    await within(guard.hooked, 5000, 'the hooks registered');
    // What is left when `stopped` is told: the process exits 1 right after it.
    let upWhenStopped: string[] | undefined;
    ctx.events.stopped.on(() => (upWhenStopped = up()));
    const reason = ctx.events.stopRequested.first();
    await within(guard.stops[0]!(), 5000, 'the fault stop');
    assert.equal(await reason, 'fault', 'the stop is asked for as a fault');
    assert.deepEqual(upWhenStopped, [], 'the fault stop waited for the whole stack: the sockets removed first');
    assert.deepEqual(up(), [], 'nothing left once the fault stop resolves');
    assert.equal(await run, 0);
  });

  it('a stop asked for while the parts start ends the run once they have started, and undoes them all', async () => {
    const run = runProxylessRecipe(ctx, inputs);
    // /quitquitquit or a signal as the relay starts: nothing waits for it yet.
    ctx.events.stopRequested.emit('quitquitquit');
    assert.equal(await within(run, 5000, 'the recipe to end'), 0);
    assert.deepEqual(guard.undone.length, 2, 'the hooks were registered, then undone');
    assert.deepEqual(up(), [], 'every socket removed');
    await within(ctx.events.stopped.first(), 1000, 'stopped told');
  });

  it('a relay that cannot listen fails the start, and `stopped` is still told', async () => {
    const run = runProxylessRecipe(ctx, { ...inputs, xdsSocketPath: join(dir, 'missing', 'XDS') });
    await assert.rejects(within(run, 5000, 'the recipe to fail'));
    await within(ctx.events.stopped.first(), 1000, 'stopped told');
    assert.deepEqual([existsSync(inputs.bootstrapPath), up()], [false, []], 'nothing after the relay started');
  });
});
