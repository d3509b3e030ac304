/**
 * What a pod's own inputs can do to its agent (issue 44), each in a pod: the
 * agent as uid 1337 in a network namespace with the injection template's env,
 * the project's peers standing in for istiod. A big downward-API annotation,
 * ProxyConfig by its proto field names, an unknown flag before the proxy
 * type, a proxyMetadata value of the wrong type, and a discovery server whose
 * certificate does not chain to the pod's roots.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { execa } from 'execa';
import { agentBin, nodeBin } from '../support/paths.ts';
import { makePodNamespace, podSkipReason, proxyUid, startMesh, startPodAgent, untilPodReady, type Mesh, type Pod, type PodOptions } from '../support/pods.ts';
import { pollUntil, waitUntil } from '../support/poll.ts';

const skip = await podSkipReason();

describe('a pod\'s own inputs (issue 44)', { skip, timeout: 300_000 }, () => {
  let mesh: Mesh;
  let dir: string | undefined;
  let wrongRoot: string;
  before(async () => {
    mesh = await startMesh();
    dir = await mkdtemp(join(tmpdir(), 'pod-inputs-'));
    await chmod(dir, 0o755);
    wrongRoot = join(dir, 'wrong-root.pem');
    await execa('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '1', '-subj', '/CN=not the mesh root',
      '-keyout', join(dir, 'wrong-root.key'), '-out', wrongRoot]);
    await chmod(wrongRoot, 0o644);
  });
  after(async () => {
    await mesh?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** A pod with these options, removed when the case ends. */
  async function podWith(cleanup: AsyncDisposableStack, index: number, options: PodOptions): Promise<Pod> {
    const netns = await makePodNamespace(mesh, index);
    cleanup.defer(() => netns.remove());
    const pod = await startPodAgent(mesh, netns, index, options);
    cleanup.defer(() => pod.stop());
    return pod;
  }

  const exited = (pod: Pod) => pollUntil(() => pod.exitCode(), { what: 'the pod agent to exit', timeoutMs: 30_000, accept: (code) => code !== undefined, show: String });

  it('a 150 KB annotation without escapes in the downward-API file: the agent starts and the pod becomes ready, no crash loop', async () => {
    await using cleanup = new AsyncDisposableStack();
    const blob = 'A'.repeat(150 * 1024);
    const pod = await podWith(cleanup, 0, { annotations: `sidecar.istio.io/status="{}"\nexample.com/blob="${blob}"\n` });
    await untilPodReady(pod);
    const ofPod = (entry: { event: string; metadata?: unknown }) => entry.event === 'node' && JSON.stringify(entry.metadata ?? {}).includes(pod.ip);
    const node = await mesh.peer.log.waitFor(ofPod, 30_000, "the pod's node at the discovery server");
    assert.equal((node.metadata as { ANNOTATIONS?: Record<string, string> }).ANNOTATIONS?.['example.com/blob'], blob, 'istiod gets it whole');
    assert.equal(pod.exitCode(), undefined, pod.stderr());
  });

  it("drain_duration, ProxyConfig's proto name in PROXY_CONFIG, takes effect: the pod's Envoy runs with --drain-time-s from it", async () => {
    await using cleanup = new AsyncDisposableStack();
    const pod = await podWith(cleanup, 1, { proxyConfig: { drainDuration: undefined, parentShutdownDuration: undefined, drain_duration: '2s' } });
    await untilPodReady(pod);
    const [envoy] = pod.envoys();
    const argv = readFileSync(`/proc/${envoy}/cmdline`, 'utf8').split('\0');
    assert.equal(argv[argv.indexOf('--drain-time-s') + 1], '2', argv.join(' '));
  });

  it("'proxy --foo router' in a pod exits 2 with one line naming --foo", async () => {
    await using cleanup = new AsyncDisposableStack();
    const netns = await makePodNamespace(mesh, 4);
    cleanup.defer(() => netns.remove());
    const asProxy = ['netns', 'exec', netns.name, 'setpriv', `--reuid=${proxyUid}`, `--regid=${proxyUid}`, '--clear-groups', '--'];
    const ran = await execa('ip', [...asProxy, nodeBin, agentBin, 'proxy', '--foo', 'router'], {
      reject: false, timeout: 30_000, extendEnv: false, env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
    });
    assert.equal(ran.exitCode, 2, ran.stderr);
    const lines = ran.stderr.trim().split('\n');
    assert.equal(lines.length, 1, ran.stderr);
    assert.match(lines[0]!, /^pilot-agent: --foo: unknown flag/, 'the flag at fault named, not the type argument');
  });

  it('a proxyMetadata value of the wrong type exits 2 naming the ProxyConfig field, not an env var the pod never set', async () => {
    await using cleanup = new AsyncDisposableStack();
    const pod = await podWith(cleanup, 2, { proxyConfig: { proxyMetadata: { ISTIO_META_DNS_CAPTURE: 'maybe' } } });
    assert.equal(await exited(pod), 2, pod.stderr());
    assert.match(pod.stderr(), /^pilot-agent: env PROXY_CONFIG: field proxyMetadata\.ISTIO_META_DNS_CAPTURE: /);
    assert.equal(pod.stderr().trim().split('\n').length, 1, pod.stderr());
  });

  it("a discovery server whose certificate does not chain to the pod's root: the TLS error names the root, without Node's --use-system-ca advice", async () => {
    await using cleanup = new AsyncDisposableStack();
    const pod = await podWith(cleanup, 3, { env: { XDS_ROOT_CA: wrongRoot } });
    const ended = await pod.log.waitFor((entry) => /^cannot reach the discovery server: TLS:/.test(String(entry.details)), 60_000, 'a TLS dial error');
    assert.ok(String(ended.details).includes(wrongRoot), String(ended.details));
    await waitUntil('a second dial failed the same way', () => pod.log.entries.filter((entry) => String(entry.details).includes(wrongRoot)).length >= 2, 30_000);
    const advised = [...pod.log.raw, ...pod.stderr().split('\n')].filter((line) => /--use-system-ca|Node\.js/.test(line));
    assert.deepEqual(advised, [], "no line carries Node's advice");
  });
});
