import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { execa } from 'execa';
import { assertGone, startAgent } from '../support/agent.ts';
import { suiteCleanup, tempDir } from '../support/cleanup.ts';
import { agentBin, envoyBin, nodeBin } from '../support/paths.ts';
import { startPeer, type Peer, type PeerEvent } from '../support/peer.ts';
import { freePort } from '../support/ports.ts';
import { simpleHttpService } from '../support/resources.ts';

/** What a pod injected by Istio sets, plus a downward-API labels file. */
const podEnv = (podInfoDir: string) => ({
  POD_NAME: 'reviews-v1-abc',
  POD_NAMESPACE: 'default',
  SERVICE_ACCOUNT: 'reviews',
  ISTIO_META_ENVOY_STATUS_PORT: '15021',
  ISTIO_META_DNS_CAPTURE: 'true',
  ISTIO_META_CLUSTER_ID: 'Kubernetes',
  ISTIO_METAJSON_LABELS: '{"app":"reviews","version":"v1"}',
  PROXY_CONFIG: '{"discoveryAddress":"istiod.istio-system.svc:15012","statNameLength":189,"holdApplicationUntilProxyStarts":true}',
  podInfoDir,
});

describe('node metadata: the JSON types istiod declares, as Envoy sends them', () => {
  let peer: Peer;
  let dir: string;

  const cleanup = suiteCleanup();

  before(async () => {
    dir = await tempDir(cleanup, 'pilot-agent-node-');
    await mkdir(join(dir, 'pod'));
    await writeFile(join(dir, 'pod', 'labels'), 'app="reviews"\nversion="v2"\npod-template-hash="54b8"\n');
    await writeFile(join(dir, 'pod', 'annotations'), 'sidecar.istio.io/inject="true"\n');
    peer = await startPeer(simpleHttpService({ listenerPort: await freePort(), upstreamPort: await freePort() }));
    cleanup.defer(() => peer.stop());
  });

  for (const type of ['sidecar', 'ingress'] as const) {
    it(`proxy ${type}: the peer receives typed metadata and a node type istiod accepts`, async () => {
      const { podInfoDir, ...env } = podEnv(join(dir, 'pod'));
      const agent = await startAgent({
        type,
        discoveryAddress: peer.address,
        env,
        args: ['--podInfoDir', podInfoDir, '--ingressCertDir', join(dir, 'ingress-certs')],
      });
      try {
        const seen = await peer.log.waitFor(
          (entry: PeerEvent) => entry.event === 'node' && String(entry.node).startsWith(type === 'sidecar' ? 'sidecar~' : 'router~'),
          30_000,
          `a ${type} node`,
        );
        const metadata = seen.metadata as Record<string, unknown>;
        assert.equal(metadata.ENVOY_STATUS_PORT, 15021, 'ports are numbers');
        assert.equal(metadata.DNS_CAPTURE, 'true', 'string booleans stay strings');
        assert.equal(metadata.NAMESPACE, 'default');
        assert.equal(metadata.NAME, 'reviews-v1-abc');
        assert.equal(metadata.SERVICE_ACCOUNT, 'reviews');
        assert.equal(metadata.CLUSTER_ID, 'Kubernetes');
        assert.deepEqual(metadata.LABELS, { app: 'reviews', version: 'v2' }, 'pod labels over static labels, no pod-template-hash');
        assert.deepEqual(metadata.STATIC_LABELS, { app: 'reviews', version: 'v1' });
        assert.deepEqual(metadata.ANNOTATIONS, { 'sidecar.istio.io/inject': 'true' });
        assert.match(String(metadata.ISTIO_VERSION), /^1\.\d+\.\d+$/);
        assert.match(String(metadata.INSTANCE_IPS), /^127\.0\.0\.1(,|$)/, 'the role IP first, comma-separated');
        const proxyConfig = metadata.PROXY_CONFIG as Record<string, unknown>;
        assert.equal(typeof proxyConfig, 'object');
        assert.equal(proxyConfig.statNameLength, 189, 'PROXY_CONFIG fields the agent does not decide are passed on');
        assert.equal(proxyConfig.holdApplicationUntilProxyStarts, true);
        assert.equal(proxyConfig.proxyAdminPort, agent.adminPort, 'what the agent runs with wins');
        assert.equal(proxyConfig.drainDuration, '1s');
      } finally {
        assert.equal((await agent.stop('SIGTERM')).exitCode, 0, agent.stderr());
        await assertGone(agent.envoyPids());
      }
    });
  }

  it('a 150 KB annotation without escapes (a pod annotated with a big blob) is read, not a crash loop: the peer gets it whole', async () => {
    const podInfoDir = join(dir, 'big-pod');
    await mkdir(podInfoDir);
    const blob = 'A'.repeat(150 * 1024);
    await writeFile(join(podInfoDir, 'annotations'), `sidecar.istio.io/inject="true"\nexample.com/blob="${blob}"\n`);
    const from = peer.log.entries.length;
    const agent = await startAgent({ discoveryAddress: peer.address, args: ['--podInfoDir', podInfoDir] });
    try {
      const seen = await peer.log.waitFor((entry: PeerEvent) => entry.event === 'node', 30_000, 'a node from this agent', from);
      const annotations = (seen.metadata as { ANNOTATIONS?: Record<string, string> }).ANNOTATIONS;
      assert.equal(annotations?.['example.com/blob'], blob);
    } finally {
      assert.equal((await agent.stop('SIGTERM')).exitCode, 0, agent.stderr());
      await assertGone(agent.envoyPids());
    }
  });
});

describe('node metadata that istiod would refuse ends the agent with exit 2, naming the input', () => {
  let dir: string;
  let ok: string[];

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'pilot-agent-node-bad-'));
    await mkdir(join(dir, 'pod'));
    await writeFile(join(dir, 'pod', 'labels'), 'app=reviews\n');
    ok = [
      'sidecar',
      '--serviceregistry',
      'Other',
      '--ip',
      '127.0.0.1',
      '--configPath',
      join(dir, 'config'),
      '--binaryPath',
      envoyBin,
      '--discoveryAddress',
      '127.0.0.1:1',
    ];
  });

  after(() => rm(dir, { recursive: true, force: true }));

  const cases: { name: string; env?: Record<string, string>; args?: () => string[]; line: RegExp }[] = [
    {
      name: 'a port that is not a number',
      env: { ISTIO_META_ENVOY_STATUS_PORT: 'status' },
      line: /^pilot-agent: env ISTIO_META_ENVOY_STATUS_PORT: must be a port number/,
    },
    {
      name: 'a string boolean that is not a boolean',
      env: { ISTIO_META_DNS_CAPTURE: 'yes' },
      line: /^pilot-agent: env ISTIO_META_DNS_CAPTURE: "yes" is not a boolean/,
    },
    {
      name: 'a PROXY_CONFIG field of the wrong type',
      env: { PROXY_CONFIG: '{"drainDuration":45}' },
      line: /^pilot-agent: env PROXY_CONFIG: field drainDuration must be a duration/,
    },
    {
      name: 'a proxyMetadata value of the wrong type names the ProxyConfig field, not an env var',
      env: { PROXY_CONFIG: '{"proxyMetadata":{"ISTIO_META_ENVOY_STATUS_PORT":"x"}}' },
      line: /^pilot-agent: env PROXY_CONFIG: field proxyMetadata\.ISTIO_META_ENVOY_STATUS_PORT: must be a port number/,
    },
    {
      name: 'a proxyMetadata DNS setting that is not a boolean names the ProxyConfig field',
      env: { PROXY_CONFIG: '{"proxyMetadata":{"ISTIO_META_DNS_CAPTURE":"yes"}}' },
      line: /^pilot-agent: env PROXY_CONFIG: field proxyMetadata\.ISTIO_META_DNS_CAPTURE: "yes" is not a boolean/,
    },
    {
      name: 'ISTIO_METAJSON_ nested 5000 deep',
      env: { ISTIO_METAJSON_X: `${'['.repeat(5000)}${']'.repeat(5000)}` },
      line: /^pilot-agent: env ISTIO_METAJSON_X: nests deeper than 64 levels$/,
    },
    {
      name: 'a labels file not in downward-API format',
      args: () => ['--podInfoDir', join(dir, 'pod')],
      line: /^pilot-agent: .*pod\/labels: line 1: value is not a double-quoted string/,
    },
  ];

  for (const testCase of cases) {
    it(testCase.name, async () => {
      const result = await execa(nodeBin, [agentBin, 'proxy', ...ok, ...(testCase.args?.() ?? [])], {
        reject: false,
        timeout: 30_000,
        env: testCase.env ?? {},
        extendEnv: false,
      });
      assert.equal(result.exitCode, 2, `exit code; stderr: ${result.stderr}`);
      const lines = result.stderr.trim().split('\n');
      assert.equal(lines.length, 1, `one line on stderr, got:\n${result.stderr}`);
      assert.match(lines[0]!, testCase.line);
    });
  }
});
