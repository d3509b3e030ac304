import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { runInputsOf } from '../../test/support/run-inputs.ts';
import { AgentError } from '../shared/errors.ts';
import { prepareRun } from './prepare-run.ts';
import { processGuard } from './process-guard.ts';

const dir = await mkdtemp(join(tmpdir(), 'prepare-run-'));
after(() => rm(dir, { recursive: true, force: true }));

const inputsOf = (name: string, args: string[], env: Record<string, string> = {}) => runInputsOf(dir, name, args, env);

describe('prepareRun, in process (real files, no Envoy)', () => {
  it('a sidecar: the bootstrap rendered for the role and the pod, the sockets in --configPath, the app probes parsed, nothing started', async () => {
    const probers = JSON.stringify({ '/app-health/reviews/readyz': { httpGet: { path: '/ready', port: 9080 } } });
    const inputs = await inputsOf('sidecar', ['--discoveryAddress', '127.0.0.1:15010'], { ISTIO_KUBE_APP_PROBERS: probers });
    const plan = await prepareRun(inputs);
    assert.equal(plan.recipe.kind, 'envoy');
    if (plan.recipe.kind !== 'envoy') return;
    const config = join(inputs.run, 'config');
    assert.equal(plan.bootstrap.nodeId, 'sidecar~198.18.0.7~reviews-v1.shop~shop.svc.cluster.local');
    assert.deepEqual((plan.bootstrap.metadata.LABELS as Record<string, string>).version, 'v1', "the node's LABELS come from the pod's labels file");
    assert.equal(plan.config.serviceCluster, 'reviews.shop', 'the service cluster named from the app label');
    const rendered = JSON.parse(plan.bootstrap.text) as { node: { id: string } };
    assert.equal(rendered.node.id, plan.bootstrap.nodeId);
    assert.deepEqual(plan.recipe.inputs.sockets, { xds: join(config, 'XDS'), readiness: join(config, 'READINESS') });
    assert.deepEqual(plan.recipe.inputs.upstream.address, { host: '127.0.0.1', port: 15010 });
    assert.equal(plan.recipe.inputs.upstream.policy, 'NONE');
    assert.deepEqual([...(plan.recipe.inputs.app?.probes?.keys() ?? [])], ['/app-health/reviews/readyz']);
    assert.equal(plan.recipe.inputs.guard, processGuard);
    assert.equal(plan.recipe.inputs.grpcBootstrapPath, undefined);
    assert.deepEqual(await readdir(config), [], '--configPath is made, and nothing is written in it yet');
    assert.deepEqual(inputs.logs.lines, [], 'a healthy default pod logs no warning');
  });

  it('DISABLE_ENVOY: the proxyless recipe, its gRPC bootstrap in --configPath, the CA output shared with the app', async () => {
    const inputs = await inputsOf('proxyless', ['--discoveryAddress', '127.0.0.1:15010'], { DISABLE_ENVOY: 'true', CA_ADDR: '127.0.0.1:15012' });
    const plan = await prepareRun(inputs);
    assert.equal(plan.recipe.kind, 'proxyless');
    if (plan.recipe.kind !== 'proxyless') return;
    const config = join(inputs.run, 'config');
    assert.equal(plan.recipe.inputs.bootstrapPath, join(config, 'grpc-bootstrap.json'));
    assert.deepEqual([plan.recipe.inputs.xdsSocketPath, plan.recipe.inputs.readinessSocketPath], [join(config, 'XDS'), join(config, 'READINESS')]);
    assert.equal(plan.recipe.inputs.nodeId, plan.bootstrap.nodeId);
    assert.equal(plan.recipe.inputs.caSettings?.outputShared, true);
  });

  it("a custom bootstrap's admin port becomes the one the agent watches, said once", async () => {
    const inputs = await inputsOf('custom', []);
    const custom = join(inputs.run, 'custom.yaml');
    await writeFile(custom, 'admin:\n  address:\n    socket_address: { address: 127.0.0.1, port_value: 15555 }\n');
    const plan = await prepareRun({ ...inputs, config: { ...inputs.config, customConfigFile: custom } });
    assert.equal(plan.config.proxyAdminPort, 15555);
    assert.deepEqual(inputs.logs.lines.map((line) => [line.msg, line.adminPort]), [['admin port taken from the custom bootstrap', 15555]]);
  });

  it('a bootstrap override that is not there is exit 2 naming it, before --configPath is made', async () => {
    const inputs = await inputsOf('override', []);
    const missing = join(inputs.run, 'override.yaml');
    await assert.rejects(prepareRun({ ...inputs, config: { ...inputs.config, bootstrapOverride: missing } }), (error: unknown) => {
      assert.ok(error instanceof AgentError && error.exitCode === 2);
      assert.match(error.message, new RegExp(missing));
      return true;
    });
    assert.deepEqual(await readdir(inputs.run), ['pod']);
  });
});
