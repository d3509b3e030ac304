/**
 * What `pilot-agent inject` renders for istio-init, applied for real with
 * our istio-iptables in a network namespace: with the default values every
 * inbound port of the pod is captured, declared or not (Istio's chart
 * default, includeInboundPorts "*"), so plaintext from the pod network never
 * reaches the app around the proxy.
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { execa } from 'execa';
import { parseAllDocuments } from 'yaml';
import { assertBundleFresh } from '../support/bundle-fresh.ts';
import { suiteCleanup } from '../support/cleanup.ts';
import { agentBin, nodeBin } from '../support/paths.ts';
import { connectAll, hostPort, iptablesSkipReason, makePodPair, runIptables, startListener, v4, type PodPair } from '../support/iptables-pods.ts';
import { iptablesRuleLines, nftRuleset, nftSkipReason } from '../support/nft-pods.ts';
import { tempDir } from '../support/cleanup.ts';

const skip = (await iptablesSkipReason()) ?? false;
const nftSkip = (await nftSkipReason()) ?? false;

type Mapping = Record<string, unknown>;

/** istio-init's arguments (without the leading `istio-iptables`) and the warnings, as `inject` renders them for this pod. */
async function injectedInitArgs(pod: string, valuesFile?: string): Promise<{ args: string[]; stderr: string }> {
  assertBundleFresh();
  const values = valuesFile === undefined ? [] : ['--values', valuesFile];
  const result = await execa(nodeBin, [agentBin, 'inject', '-f', '-', ...values], { input: pod, env: {}, extendEnv: false, timeout: 30_000 });
  const doc = parseAllDocuments(result.stdout)[0]?.toJS() as { spec: { initContainers: Mapping[] } };
  const init = doc.spec.initContainers.find((container) => container['name'] === 'istio-init');
  const args = init?.['args'] as string[];
  assert.equal(args[0], 'istio-iptables');
  return { args: args.slice(1), stderr: result.stderr };
}

const podDeclaring = (ports: string) => `apiVersion: v1
kind: Pod
metadata: {name: web, labels: {app: web}}
spec:
  containers: [{name: web, image: example/web:1${ports}}]
`;

describe("inject's istio-init in a pod: inbound capture with the default values", { timeout: 120_000 }, () => {
  const cleanup = suiteCleanup();
  let pair: PodPair;

  it('sets up two pods', { skip }, async () => {
    pair = await makePodPair(cleanup, 'inj', { v4: true, v6: false });
    await startListener(cleanup, pair, pair.appNs, 'app', [15006, 8080, 9090], false);
  });

  for (const [label, ports] of [['declares no containerPorts', ''], ['declares 8080 and also listens on 9090', ', ports: [{containerPort: 8080}]']] as const) {
    it(`a pod that ${label}: every app port goes to 15006, and inject warns of nothing`, { skip }, async () => {
      await execa('ip', ['netns', 'exec', pair.appNs, 'iptables', '-t', 'nat', '-F']);
      await execa('ip', ['netns', 'exec', pair.appNs, 'iptables', '-t', 'nat', '-X']);
      const { args, stderr } = await injectedInitArgs(podDeclaring(ports));
      assert.equal(stderr, '');
      const result = await runIptables(pair.appNs, args);
      assert.equal(result.exitCode, 0, result.stderr);
      const answers = await connectAll(pair, pair.peerNs, v4.app, [8080, 9090]);
      for (const port of [8080, 9090]) assert.equal(answers.get(port), `app 15006 ${hostPort(v4.app, port)}`, `port ${port}`);
    });
  }

  it('an explicit empty includeInboundPorts annotation is honoured, and inject says so on stderr', { skip }, async () => {
    const pod = podDeclaring('').replace('labels: {app: web}}', 'labels: {app: web}, annotations: {traffic.sidecar.istio.io/includeInboundPorts: ""}}');
    const { args, stderr } = await injectedInitArgs(pod);
    assert.equal(args[args.indexOf('-b') + 1], '');
    assert.match(stderr, /^warning: .*no inbound port is captured .*without mTLS or authorization$/);
  });
});

describe("inject's istio-init with nativeNftables: true (Istio's global.nativeNftables)", { timeout: 120_000 }, () => {
  const cleanup = suiteCleanup();

  it('renders --native-nftables, and those arguments capture every app port with nftables rules only', { skip: nftSkip }, async () => {
    const pair = await makePodPair(cleanup, 'injnft', { v4: true, v6: false });
    await startListener(cleanup, pair, pair.appNs, 'app', [15006, 8080, 9090], false);
    const dir = await tempDir(cleanup, 'pa-inject-nft-');
    await writeFile(join(dir, 'values.yaml'), 'nativeNftables: true\n');
    const { args, stderr } = await injectedInitArgs(podDeclaring(''), join(dir, 'values.yaml'));
    assert.equal(stderr, '');
    assert.equal(args.at(-1), '--native-nftables');
    const result = await runIptables(pair.appNs, args);
    assert.equal(result.exitCode, 0, result.stderr);
    assert.deepEqual(await iptablesRuleLines(pair.appNs), []);
    assert.match(await nftRuleset(pair.appNs), /table inet istio-proxy-nat/);
    const answers = await connectAll(pair, pair.peerNs, v4.app, [8080, 9090]);
    for (const port of [8080, 9090]) assert.equal(answers.get(port), `app 15006 ${hostPort(v4.app, port)}`, `port ${port}`);
  });
});
