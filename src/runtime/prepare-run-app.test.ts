import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { runInputsOf } from '../../test/support/run-inputs.ts';
import { AgentError } from '../shared/errors.ts';
import { prepareRun, type RunPlan } from './prepare-run.ts';
import type { EnvoyRecipeInputs } from './envoy-recipe.ts';

const dir = await mkdtemp(join(tmpdir(), 'prepare-run-app-'));
after(() => rm(dir, { recursive: true, force: true }));
let runs = 0;
const inputsOf = (args: string[], env: Record<string, string | undefined> = {}) => runInputsOf(dir, `run-${runs++}`, args, env);

function envoyInputs(plan: RunPlan): EnvoyRecipeInputs {
  assert.equal(plan.recipe.kind, 'envoy');
  return (plan.recipe as { inputs: EnvoyRecipeInputs }).inputs;
}

/** A probe of the app that names a host other than the pod's: taken, with one warning. */
const probers = JSON.stringify({ '/app-health/reviews/readyz': { httpGet: { host: '198.18.0.99', path: '/ready', port: 9080 } } });

describe("prepareRun: the app's probes and metrics, as the status port gets them", () => {
  const cases: { name: string; args?: string[]; env: Record<string, string | undefined>; network: object; metrics: object[]; merge: boolean }[] = [
    {
      name: 'defaults: the pod IP (INSTANCE_IP), HTTP/2 offered, a connection per probe, the app metrics merged with Envoy',
      env: { ISTIO_PROMETHEUS_ANNOTATIONS: JSON.stringify({ scrape: 'true', port: '9080', path: '/metrics' }) },
      network: { destination: '198.18.0.7', localAddress: '127.0.0.6', http2: true, keepAlive: false },
      metrics: [{ url: 'http://127.0.0.1:9080/metrics' }],
      merge: true,
    },
    {
      name: 'each status env setting turned: loopback (legacy), HTTP/1.1, kept connections, Envoy stats left out',
      env: {
        REWRITE_PROBE_LEGACY_LOCALHOST_DESTINATION: 'true', ISTIO_ENABLE_HTTP2_PROBING: 'false', ENABLE_PROBE_KEEPALIVE_CONNECTIONS: 'true',
        PILOT_AGENT_MERGE_ENVOY_STATS: 'false',
      },
      network: { destination: '127.0.0.1', localAddress: '127.0.0.6', http2: false, keepAlive: true },
      metrics: [],
      merge: false,
    },
    {
      name: 'no INSTANCE_IP: the proxy IP (--ip) is the pod IP',
      args: ['--ip', '198.18.0.9'],
      env: { INSTANCE_IP: undefined },
      network: { destination: '198.18.0.9', localAddress: '127.0.0.6', http2: true, keepAlive: false },
      metrics: [],
      merge: true,
    },
  ];
  for (const { name, args = [], env, network, metrics, merge } of cases) {
    it(name, async () => {
      const inputs = await inputsOf(args, { ISTIO_KUBE_APP_PROBERS: probers, ...env });
      const { app } = envoyInputs(await prepareRun(inputs));
      assert.deepEqual(app?.probeNetwork, network);
      assert.deepEqual(app?.metrics, metrics);
      assert.equal(app?.mergeEnvoyStats, merge);
      assert.deepEqual([...(app?.probes?.keys() ?? [])], ['/app-health/reviews/readyz']);
      const warned = inputs.logs.lines.map(({ env: named, msg }) => ({ env: named, msg }));
      const at = (network as { destination: string }).destination;
      assert.deepEqual(warned, [{ env: 'ISTIO_KUBE_APP_PROBERS', msg: `/app-health/reviews/readyz: host "198.18.0.99" is ignored: the agent probes its own pod, at ${at}` }]);
    });
  }
});

describe("prepareRun: ProxyConfig.readinessProbe (a VM's health), probed as the app's probes are", () => {
  const probe = { httpGet: { host: '198.18.0.99', path: '/healthz', port: 8080 }, periodSeconds: 5 };

  it("checked now, from the app's probe network; a foreign host is one warning naming where the probe was set", async () => {
    const inputs = await inputsOf([], { PROXY_CONFIG: JSON.stringify({ readinessProbe: probe }) });
    const { health, app } = envoyInputs(await prepareRun(inputs));
    assert.ok(health, 'a probe is given: the health part runs');
    assert.equal(health.network, app?.probeNetwork, "the app's probe network");
    assert.equal(health.probe.periodMs, 5000);
    const warned = inputs.logs.lines.map(({ source, field, msg }) => ({ source, field, msg }));
    assert.deepEqual(warned, [{ source: 'env PROXY_CONFIG', field: 'readinessProbe', msg: 'host "198.18.0.99" is ignored: the agent probes its own pod, at 198.18.0.7' }]);
  });

  it('a probe set where no origin is known is named ProxyConfig, in its warning and its refusal (exit 2)', async () => {
    const inputs = await inputsOf([]);
    const plan = await prepareRun({ ...inputs, proxyConfigOrigin: undefined, mergedProxyConfig: { readinessProbe: probe } });
    assert.ok(envoyInputs(plan).health);
    assert.deepEqual(inputs.logs.lines.map(({ source, field }) => ({ source, field })), [{ source: 'ProxyConfig', field: 'readinessProbe' }]);
    await assert.rejects(prepareRun({ ...inputs, proxyConfigOrigin: undefined, mergedProxyConfig: { readinessProbe: 5 } }), (error: unknown) => {
      assert.ok(error instanceof AgentError && error.exitCode === 2);
      assert.equal(error.message, 'ProxyConfig: field readinessProbe: must be an object');
      return true;
    });
  });

  it('no probe, or no merged ProxyConfig at all: no health part', async () => {
    const inputs = await inputsOf([]);
    assert.equal(envoyInputs(await prepareRun(inputs)).health, undefined);
    assert.equal(envoyInputs(await prepareRun({ ...inputs, mergedProxyConfig: undefined })).health, undefined);
  });
});

describe("prepareRun: Envoy's launch", () => {
  it('by default: IPv4 local addresses, no core dump, no bootstrap override, no flush size', async () => {
    const plan = await prepareRun(await inputsOf([]));
    assert.deepEqual(envoyInputs(plan).launch, { localAddressIpVersion: 'v4', configYaml: undefined, enableCoreDump: false, fileFlushMinSizeKb: undefined });
  });

  it('each launch input: a core dump, ProxyConfig.fileFlushMinSizeKb, the override file read as JSON', async () => {
    const override = join(dir, 'override.yaml');
    await writeFile(override, 'stats_flush_interval: 7s\n');
    const inputs = await inputsOf(['--bootstrapOverride', override], { ISTIO_ENVOY_ENABLE_CORE_DUMP: 'true', PROXY_CONFIG: '{"fileFlushMinSizeKb": 64}' });
    const { launch } = envoyInputs(await prepareRun(inputs));
    assert.deepEqual(launch, { localAddressIpVersion: 'v4', configYaml: '{"stats_flush_interval":"7s"}', enableCoreDump: true, fileFlushMinSizeKb: 64 });
  });

  it('a config without bootstrap fields (as a caller may build it) launches with no flush size', async () => {
    const inputs = await inputsOf([]);
    const plan = await prepareRun({ ...inputs, config: { ...inputs.config, bootstrapFields: undefined } });
    assert.equal(envoyInputs(plan).launch.fileFlushMinSizeKb, undefined);
  });
});

describe('prepareRun: the warnings of a pod that asks what is not rendered', () => {
  const cases: { name: string; env: Record<string, string>; lines: Record<string, unknown>[] }[] = [
    {
      name: 'a CLOUD_PLATFORM that is no platform: no locality, said with why',
      env: { CLOUD_PLATFORM: 'mars' },
      lines: [{ env: 'CLOUD_PLATFORM', problem: '"mars" is not aws, azure, gcp or none', msg: 'no locality from the platform' }],
    },
    {
      name: 'metadata discovery on State of the World: not rendered, said once',
      env: { PEER_METADATA_DISCOVERY: 'true', ISTIO_DELTA_XDS: 'false' },
      lines: [{ metadata: 'METADATA_DISCOVERY', msg: 'metadata discovery is not rendered: it needs Delta xDS (as Istio disables it on State of the World)' }],
    },
    { name: 'metadata discovery on Delta xDS: rendered, no warning', env: { PEER_METADATA_DISCOVERY: 'true' }, lines: [] },
    { name: 'State of the World without metadata discovery: no warning', env: { ISTIO_DELTA_XDS: 'false' }, lines: [] },
  ];
  for (const { name, env, lines } of cases) {
    it(name, async () => {
      const inputs = await inputsOf([], env);
      await prepareRun(inputs);
      assert.deepEqual(inputs.logs.lines.map(({ level, time, pid, hostname, ...line }) => line), lines);
    });
  }
});
