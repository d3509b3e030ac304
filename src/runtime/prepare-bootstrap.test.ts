import assert from 'node:assert/strict';
import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import type { NetworkInterfaceInfo } from 'node:os';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { runInputsOf } from '../../test/support/run-inputs.ts';
import { prepareBootstrap } from './prepare-bootstrap.ts';

const dir = await mkdtemp(join(tmpdir(), 'prepare-bootstrap-'));
after(() => rm(dir, { recursive: true, force: true }));
let runs = 0;
const inputsOf = (args: string[], env: Record<string, string | undefined> = {}, labels?: string) => runInputsOf(dir, `run-${runs++}`, args, env, labels);

interface Rendered {
  node: { id: string; cluster: string; locality?: Record<string, string> };
  dynamic_resources: { ads_config: { api_type: string } };
}
const parsed = (text: string) => JSON.parse(text) as Rendered;

/** One host interface with `address` (not loopback): where a registry without INSTANCE_IP finds the role's IP. */
const nic = (address: string): NodeJS.Dict<NetworkInterfaceInfo[]> => ({
  eth0: [{ address, netmask: '255.255.255.0', family: 'IPv4', mac: '02:00:00:00:00:01', internal: false, cidr: `${address}/24` }],
});

describe('prepareBootstrap: the role, the node and the rendered bootstrap', () => {
  it("a Kubernetes sidecar: the node named from the pod's env, the cluster from its app label, --configPath made, IPv4 listeners", async () => {
    const inputs = await inputsOf([], { ENVOY_SECURE_METRICS_PORT: '15091', ENVOY_SECURE_MERGED_METRICS_PORT: '15092' });
    const prepared = await prepareBootstrap(inputs.config, inputs);
    assert.equal(prepared.nodeId, 'sidecar~198.18.0.7~reviews-v1.shop~shop.svc.cluster.local');
    assert.equal(prepared.domain, 'shop.svc.cluster.local');
    assert.equal(prepared.serviceCluster, 'reviews.shop');
    assert.deepEqual(prepared.secureMetrics, { envoy: 15091, merged: 15092 });
    assert.deepEqual([prepared.metadata.ENVOY_SECURE_METRICS_PORT, prepared.metadata.ENVOY_SECURE_MERGED_METRICS_PORT], [15091, 15092]);
    const node = parsed(prepared.text).node;
    assert.deepEqual([node.id, node.cluster], [prepared.nodeId, 'reviews.shop']);
    assert.match(prepared.text, new RegExp(join(inputs.config.configPath, 'XDS')), "the bootstrap reaches the relay on --configPath's socket");
    assert.deepEqual(prepared.configDir, {});
    assert.ok((await stat(inputs.config.configPath)).isDirectory());
    assert.deepEqual(prepared.listenerHosts, { wildcard: '0.0.0.0', localhost: '127.0.0.1', dnsLookupFamily: 'V4_ONLY' });
    assert.deepEqual([prepared.platform, prepared.locality], [undefined, {}]);
  });

  it("the Other registry without --ip: the role's IP is the host's first private address, its id and domain from it", async () => {
    const inputs = await inputsOf(['--serviceregistry', 'Other'], { INSTANCE_IP: undefined });
    const prepared = await prepareBootstrap(inputs.config, { ...inputs, interfaces: () => nic('198.18.0.42') });
    assert.equal(prepared.nodeId, 'sidecar~198.18.0.42~198.18.0.42~');
  });

  it('logs as JSON when asked: the bootstrap says so to Envoy', async () => {
    const inputs = await inputsOf([]);
    const [plain, json] = [await prepareBootstrap(inputs.config, inputs), await prepareBootstrap(inputs.config, { ...inputs, logAsJson: true })];
    assert.notEqual(plain.text, json.text);
  });
});

describe("prepareBootstrap: the Delta→SotW fallback's bootstrap, rendered on demand", () => {
  const cases: { name: string; env?: Record<string, string>; custom?: boolean; waypoint?: boolean; sotw: boolean }[] = [
    { name: 'a sidecar on Delta xDS: the same bootstrap on State of the World', sotw: true },
    { name: 'already on State of the World (ISTIO_DELTA_XDS=false): none', env: { ISTIO_DELTA_XDS: 'false' }, sotw: false },
    { name: "an operator's own bootstrap (--customConfigFile): none", custom: true, sotw: false },
    { name: 'a waypoint (Delta for its metadata discovery, as Istio): none', waypoint: true, sotw: false },
  ];
  for (const { name, env = {}, custom, waypoint, sotw } of cases) {
    it(name, async () => {
      const inputs = await inputsOf([], env);
      const customConfigFile = custom ? join(dir, `custom-${runs++}.json`) : undefined;
      if (customConfigFile) await writeFile(customConfigFile, '{"node": {"id": "mine", "cluster": "mine"}}');
      const config = { ...inputs.config, customConfigFile, ...(waypoint ? { proxyType: 'waypoint' as const } : {}) };
      const prepared = await prepareBootstrap(config, inputs);
      assert.equal(prepared.renderSotw !== undefined, sotw);
      if (!prepared.renderSotw) return;
      const [delta, fallback] = [parsed(prepared.text), parsed(await prepared.renderSotw())];
      assert.equal(delta.dynamic_resources.ads_config.api_type, 'DELTA_GRPC');
      assert.equal(fallback.dynamic_resources.ads_config.api_type, 'GRPC');
      assert.deepEqual({ ...fallback, dynamic_resources: undefined }, { ...delta, dynamic_resources: undefined }, 'the same node, listeners and clusters');
    });
  }
});

describe("prepareBootstrap: the node's locality, from the pod's labels or else the platform", () => {
  it("the pod's topology labels: no platform asked", async () => {
    const labels = 'app="reviews"\ntopology.istio.io/locality="r1.z1"\n';
    const inputs = await inputsOf([], { CLOUD_PLATFORM: 'gcp', GCP_ZONE: 'us-central1-a' }, labels);
    const prepared = await prepareBootstrap(inputs.config, inputs);
    assert.equal(prepared.platform, undefined);
    assert.deepEqual(prepared.locality, { region: 'r1', zone: 'z1' });
    assert.deepEqual(parsed(prepared.text).node.locality, { region: 'r1', zone: 'z1' });
  });

  it('no label: the platform (GCP_ZONE), in the plan and in the bootstrap', async () => {
    const inputs = await inputsOf([], { CLOUD_PLATFORM: 'gcp', GCP_ZONE: 'us-central1-a' });
    const prepared = await prepareBootstrap(inputs.config, inputs);
    assert.deepEqual(prepared.platform, { locality: 'us-central1/us-central1-a' });
    assert.deepEqual(prepared.locality, { region: 'us-central1', zone: 'us-central1-a' });
    assert.deepEqual(parsed(prepared.text).node.locality, { region: 'us-central1', zone: 'us-central1-a' });
  });

  it('a platform that gives none: its problem, and no locality', async () => {
    const inputs = await inputsOf([], { CLOUD_PLATFORM: 'mars' });
    const prepared = await prepareBootstrap(inputs.config, inputs);
    assert.deepEqual(prepared.platform, { problem: '"mars" is not aws, azure, gcp or none' });
    assert.deepEqual(prepared.locality, {});
  });
});
