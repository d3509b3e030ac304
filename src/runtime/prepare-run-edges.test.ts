import assert from 'node:assert/strict';
import { chmod, chown, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { after, describe, it } from 'node:test';
import { writeCerts } from '../../test/support/envoy-recipe.ts';
import { runInputsOf } from '../../test/support/run-inputs.ts';
import { AgentError } from '../shared/errors.ts';
import { prepareRun } from './prepare-run.ts';

const dir = await mkdtemp(join(tmpdir(), 'prepare-run-edges-'));
after(() => rm(dir, { recursive: true, force: true }));
let runs = 0;
const inputsOf = (args: string[], env: Record<string, string | undefined> = {}) => runInputsOf(dir, `run-${runs++}`, args, env);
const quiet = ({ level, time, pid, hostname, ...line }: Record<string, unknown>) => line;

describe("prepareRun: a custom bootstrap's admin", () => {
  const admin = (address: string, port: number) => `admin:\n  address:\n    socket_address: { address: "${address}", port_value: ${port} }\n`;
  const custom = async (text: string) => {
    const path = join(dir, `custom-${runs++}.yaml`);
    await writeFile(path, text);
    return path;
  };

  it('none on a TCP port: the flag port stays, with one warning that the agent cannot see Envoy become LIVE', async () => {
    const inputs = await inputsOf([]);
    const path = await custom('static_resources: {}\n');
    const plan = await prepareRun({ ...inputs, config: { ...inputs.config, customConfigFile: path } });
    assert.equal(plan.config.proxyAdminPort, 15000);
    assert.equal(plan.config.proxyAdminHost, '127.0.0.1');
    const msg = 'custom bootstrap has no admin on a TCP port: the agent cannot see Envoy become LIVE there';
    assert.deepEqual(inputs.logs.lines.map(quiet), [{ customConfigFile: path, adminPort: 15000, msg }]);
  });

  it('on the flag port: taken as is and not said, its host the loopback the agent calls', async () => {
    const inputs = await inputsOf([]);
    const path = await custom(admin('::1', 15000));
    const plan = await prepareRun({ ...inputs, config: { ...inputs.config, customConfigFile: path } });
    assert.deepEqual([plan.config.proxyAdminPort, plan.config.proxyAdminHost], [15000, '::1']);
    assert.deepEqual(inputs.logs.lines, []);
  });

  it('on another port: taken, said once with both ports', async () => {
    const inputs = await inputsOf([]);
    const path = await custom(admin('0.0.0.0', 15555));
    const plan = await prepareRun({ ...inputs, config: { ...inputs.config, customConfigFile: path } });
    assert.deepEqual([plan.config.proxyAdminPort, plan.config.proxyAdminHost], [15555, '127.0.0.1']);
    assert.deepEqual(inputs.logs.lines.map(quiet), [{ customConfigFile: path, adminPort: 15555, defaultAdminPort: 15000, msg: 'admin port taken from the custom bootstrap' }]);
  });

  it('on another port than a --proxyAdminPort given: exit 2 naming the flag', async () => {
    const inputs = await inputsOf(['--proxyAdminPort', '15000']);
    assert.equal(inputs.config.proxyAdminPortGiven, true);
    const path = await custom(admin('127.0.0.1', 15555));
    await assert.rejects(prepareRun({ ...inputs, config: { ...inputs.config, customConfigFile: path } }), (error: unknown) => {
      assert.ok(error instanceof AgentError && error.exitCode === 2);
      assert.match(error.message, /--proxyAdminPort.*15000 disagrees with --customConfigFile/);
      return true;
    });
  });
});

describe('prepareRun: a --configPath another user owns is left as is, with a warning', () => {
  /** The run's --configPath, made beforehand and given to uid 4321 (the tests run as root). */
  async function foreignInputs() {
    const inputs = await inputsOf([]);
    await mkdir(inputs.config.configPath);
    await chown(inputs.config.configPath, 4321, 4321);
    await chmod(inputs.config.configPath, 0o755);
    return inputs;
  }
  const advice = 'that user can replace what the agent writes there; give the agent a directory of its own';

  it('as a log line naming the path, the uid and the mode', async () => {
    const inputs = await foreignInputs();
    await prepareRun(inputs);
    const msg = 'config directory belongs to another user; left as is';
    assert.deepEqual(inputs.logs.lines.map(quiet), [{ configPath: inputs.config.configPath, uid: 4321, mode: '0755', advice, msg }]);
  });

  it('with --print-bootstrap: one plain line on stderr, no log line', async () => {
    const inputs = await foreignInputs();
    const printTo = new PassThrough();
    await prepareRun({ ...inputs, printTo });
    const path = inputs.config.configPath;
    assert.equal(String(printTo.read()), `pilot-agent: warning: --configPath ${path} belongs to uid 4321 (mode 0755); left as is (${advice})\n`);
    assert.deepEqual(inputs.logs.lines, []);
  });

  it('an own --configPath is quiet on either stream', async () => {
    const inputs = await inputsOf([]);
    await mkdir(inputs.config.configPath);
    const printTo = new PassThrough();
    await prepareRun({ ...inputs, printTo });
    assert.equal(printTo.read(), null);
    assert.deepEqual(inputs.logs.lines, []);
  });
});

describe("prepareRun: the proxyless recipe's CA", () => {
  it('the CA settings as resolved, their output shared with the app', async () => {
    const inputs = await inputsOf(['--discoveryAddress', '127.0.0.1:15010'], { DISABLE_ENVOY: 'true', CA_ADDR: '127.0.0.1:15012' });
    const plan = await prepareRun(inputs);
    const envoyPlan = await prepareRun({ ...inputs, env: { ...inputs.env, proxyless: { ...inputs.env.proxyless, disableEnvoy: false } } });
    assert.equal(plan.recipe.kind, 'proxyless');
    assert.equal(envoyPlan.recipe.kind, 'envoy');
    const { caSettings } = envoyPlan.recipe.inputs;
    assert.ok(caSettings, 'CA_ADDR and no mounted certificates: a CA');
    assert.equal(caSettings.outputShared, undefined, 'beside Envoy, the CA output is not shared');
    assert.deepEqual(plan.recipe.inputs.caSettings, { ...caSettings, outputShared: true });
  });

  it('certificates mounted in --certDir: no CA', async () => {
    const certDir = join(dir, 'mounted-certs');
    await writeCerts(certDir, Date.now() + 86_400_000);
    const inputs = await inputsOf(['--discoveryAddress', '127.0.0.1:15010', '--certDir', certDir], { DISABLE_ENVOY: 'true', CA_ADDR: '127.0.0.1:15012' });
    assert.equal(inputs.config.certDir, certDir);
    const plan = await prepareRun(inputs);
    assert.equal(plan.recipe.kind, 'proxyless');
    assert.equal(plan.recipe.inputs.caSettings, undefined);
  });
});
