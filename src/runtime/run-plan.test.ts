import assert from 'node:assert/strict';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { FakeGuard, writeCerts } from '../../test/support/envoy-recipe.ts';
import { waitUntil } from '../../test/support/poll.ts';
import { freePort } from '../../test/support/ports.ts';
import { runInputsOf, type TestRunInputs } from '../../test/support/run-inputs.ts';
import { within } from '../../test/support/within.ts';
import { FakeProxy } from '../agent/fake-proxy.ts';
import { AgentError } from '../shared/errors.ts';
import { agentVersion } from '../shared/version.ts';
import { prepareRun, type RunPlan } from './prepare-run.ts';
import { runPlan } from './run-plan.ts';

const dir = await mkdtemp(join(tmpdir(), 'run-plan-'));
after(() => rm(dir, { recursive: true, force: true }));
let runs = 0;

/**
 * A plan as the proxy command prepares it, for a pod whose certificates are mounted (no CA), with no status server
 * and its SDS socket in the run's dir; the guard is the test's. `envoy`: an Envoy binary file that is never run.
 */
async function planOf(env: Record<string, string> = {}): Promise<{ plan: RunPlan; inputs: TestRunInputs; guard: FakeGuard }> {
  const run = join(dir, `run-${runs++}`);
  const certs = join(run, 'certs');
  await writeCerts(certs, Date.now() + 86_400_000);
  const envoy = join(run, 'envoy');
  await writeFile(envoy, '#!/bin/sh\nexit 1\n');
  await chmod(envoy, 0o755);
  const [admin, prometheus] = [await freePort(), await freePort()];
  const args = ['--discoveryAddress', '127.0.0.1:15010', '--certDir', certs, '--statusPort', '0', '--binaryPath', envoy];
  const inputs = await runInputsOf(run, 'pod', [...args, '--proxyAdminPort', String(admin), '--prometheusPort', String(prometheus)], env);
  const prepared = await prepareRun({ ...inputs, config: { ...inputs.config, sdsSocket: join(run, 'SDS') } });
  const guard = new FakeGuard();
  const plan = { ...prepared, recipe: { ...prepared.recipe, inputs: { ...prepared.recipe.inputs, guard } } } as RunPlan;
  return { plan, inputs, guard };
}

/** A stand-in Envoy: says its version, passes the certificate check, serves (sleeps, 30 s at most) until stopped. */
const standIn = `#!/bin/sh
case "$1" in
  --version) echo "envoy  version: stand-in/1.40.0/Clean/RELEASE/BoringSSL"; exit 0 ;;
  --mode) echo "configuration '$4' OK"; exit 0 ;;
esac
exec sleep 30
`;

/** Ends the run as a pod's stop does: SIGTERM, then another to cut Envoy's drain short. */
async function stop(guard: FakeGuard): Promise<void> {
  await waitUntil('the run to hook the process', () => guard.terminate.length === 1, 5000);
  guard.terminate[0]!('SIGTERM');
  guard.terminate[0]?.('SIGTERM');
}

describe('runPlan: checks the plan, says what starts, runs its recipe', () => {
  it('the Envoy recipe: one startup line (node, version, ports, paths), Envoy started, SIGTERM ends it with 0', async () => {
    const { plan, inputs, guard } = await planOf();
    const proxy = new FakeProxy();
    assert.equal(plan.recipe.kind, 'envoy');
    if (plan.recipe.kind === 'envoy') plan.recipe.inputs.proxy = proxy;
    const run = runPlan(plan, inputs.logger);
    await waitUntil('epoch 0 to start', () => proxy.starts.length === 1, 5000);
    const { config } = plan;
    const started = inputs.logs.lines.filter((line) => line.msg === 'pilot-agent starting');
    assert.equal(started.length, 1);
    const { node, version, ports, paths } = started[0]!;
    assert.deepEqual({ node, version }, { node: plan.bootstrap.nodeId, version: agentVersion() });
    assert.deepEqual(ports, { admin: config.proxyAdminPort, status: 0, readiness: 15021, prometheus: config.prometheusPort });
    assert.deepEqual(paths, { config: config.configPath, envoy: config.binaryPath, certs: config.certDir });
    assert.equal((started[0]!.config as { serviceCluster: string }).serviceCluster, 'reviews.shop', 'the config the run goes with');
    proxy.live(0);
    await stop(guard);
    assert.equal(await within(run, 10_000, 'the run to end'), 0);
  });

  it('the proxyless recipe (DISABLE_ENVOY): its gRPC bootstrap written, no Envoy binary needed, SIGTERM ends it with 0', async () => {
    const { plan, inputs, guard } = await planOf({ DISABLE_ENVOY: 'true' });
    assert.equal(plan.recipe.kind, 'proxyless');
    const run = runPlan({ ...plan, config: { ...plan.config, binaryPath: join(dir, 'no-envoy') } }, inputs.logger);
    await stop(guard);
    assert.equal(await within(run, 10_000, 'the run to end'), 0);
    assert.ok(inputs.logs.lines.some((line) => line.msg === 'gRPC xDS bootstrap written; Envoy is disabled (proxyless gRPC)'));
  });

  it("without a test's proxy the recipe runs Envoy's binary for the plan's node and bootstrap, logging as envoy", async () => {
    const { plan, inputs, guard } = await planOf();
    await writeFile(plan.config.binaryPath, standIn);
    const run = runPlan(plan, inputs.logger);
    const started = await within(inputs.logs.waitFor('envoy started'), 10_000, "Envoy's start");
    assert.equal(started.component, 'envoy');
    const args = started.args as string[];
    const at = (flag: string) => args[args.indexOf(flag) + 1];
    assert.deepEqual([at('--service-node'), at('--local-address-ip-version')], [plan.bootstrap.nodeId, 'v4']);
    assert.equal(await readFile(at('-c')!, 'utf8'), plan.bootstrap.text, "epoch 0 runs the plan's bootstrap");
    await stop(guard);
    assert.equal(await within(run, 20_000, 'the run to end'), 0);
  });

  it('a plan the preflight refuses starts nothing: exit 2 naming the flag', async () => {
    const { plan, inputs, guard } = await planOf();
    const missing = join(dir, 'no-envoy');
    await assert.rejects(runPlan({ ...plan, config: { ...plan.config, binaryPath: missing } }, inputs.logger), (error: unknown) => {
      assert.ok(error instanceof AgentError && error.exitCode === 2);
      assert.equal(error.message, `--binaryPath: ${missing} does not exist or is not a file`);
      return true;
    });
    assert.deepEqual([inputs.logs.lines, guard.terminate], [[], []], 'not even the startup line');
  });
});
