/**
 * A default Istio install on Kubernetes drives the agent unchanged: it gets
 * only what Istio's injector renders (KUBE.md: `PROXY_CONFIG={}`, no
 * --discoveryAddress, the pod's env, token and root at Istio's paths) and
 * finds istiod by Istio's built-in defaults. The pod is a network namespace
 * with a mount namespace of its own: /etc/hosts names istiod (as a pod's
 * resolver would), and Envoy sits at /usr/local/bin/envoy as in the image.
 */
import assert from 'node:assert/strict';
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { before, describe, it } from 'node:test';
import { startAgent, type RunningAgent } from '../support/agent.ts';
import type { CaPeer } from '../support/ca-peer.ts';
import { deferStop, suiteCleanup, tempDir } from '../support/cleanup.ts';
import { istiodName, podMountWrap, startIstiodPeers } from '../support/istiod-peers.ts';
import { makeNetns, netnsSkipReason } from '../support/netns.ts';
import type { Peer, PeerEvent } from '../support/peer.ts';
import { identity, token } from '../support/ca-rig.ts';
import { pollUntil } from '../support/poll.ts';
const skip = await netnsSkipReason();

/** The env Istio's injector renders for a default install (KUBE.md), for pod reviews-v1-abc of service account app. */
const injectedEnv = (podIp: string, hostIp: string) => ({
  CA_ADDR: `${istiodName}:15012`, PILOT_CERT_PROVIDER: 'istiod', POD_NAME: 'reviews-v1-abc', POD_NAMESPACE: 'default', INSTANCE_IP: podIp,
  SERVICE_ACCOUNT: 'app', HOST_IP: hostIp, ISTIO_CPU_LIMIT: '2', PROXY_CONFIG: '{}', TRUST_DOMAIN: 'cluster.local',
  ISTIO_META_POD_PORTS: '[{"containerPort":9080,"protocol":"TCP"}]', ISTIO_META_APP_CONTAINERS: 'reviews', ISTIO_META_CLUSTER_ID: 'Kubernetes',
  ISTIO_META_INTERCEPTION_MODE: 'REDIRECT', ISTIO_META_WORKLOAD_NAME: 'reviews-v1', ISTIO_META_MESH_ID: 'cluster.local',
  ISTIO_META_OWNER: 'kubernetes://apis/apps/v1/namespaces/default/deployments/reviews-v1', ISTIO_KUBE_APP_PROBERS: '{}',
});
const injectedArgs = [
  '--domain',
  'default.svc.cluster.local',
  '--proxyLogLevel=warning',
  '--proxyComponentLogLevel=misc:error',
  '--log_output_level=default:info',
];

/** The pod's files at Istio's paths under its root (the agent's working directory). */
async function podRoot(dir: string, root: string, hostIp: string): Promise<string> {
  const files: [string, string][] = [
    ['var/run/secrets/tokens/istio-token', token],
    ['var/run/secrets/istio/root-cert.pem', root],
    ['etc/istio/pod/labels', 'app="reviews"\nversion="v1"\npod-template-hash="54b8"\ntopology.istio.io/locality="eu-west1.eu-west1-b"\n'],
    ['hosts', `127.0.0.1 localhost\n${hostIp} ${istiodName}\n`],
  ];
  for (const [path, text] of files) {
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), text);
  }
  // The kubelet's emptyDirs are 0777: a normal pod, nothing to warn about.
  for (const emptyDir of ['etc/istio/proxy', 'var/run/secrets/workload-spiffe-uds', 'var/lib/istio/data']) {
    await mkdir(join(dir, emptyDir), { recursive: true });
    await chmod(join(dir, emptyDir), 0o777);
  }
  return join(dir, 'hosts');
}

async function waitReady(url: string, ms: number): Promise<void> {
  const status = () => fetch(url, { signal: AbortSignal.timeout(2_000) }).then((response) => response.status);
  await pollUntil(status, { what: `${url} to answer 200`, timeoutMs: ms, intervalMs: 200, accept: (answer) => answer === 200, show: String });
}

describe('a default Istio install: only what the injector renders, and the agent finds istiod by Istio\'s defaults', { skip }, () => {
  describe('a pod with PROXY_CONFIG={} and no --discoveryAddress, ready', { timeout: 120_000 }, () => {
    const cleanup = suiteCleanup();
    let podIp: string;
    let peer: Peer;
    let ca: CaPeer;
    let agent: RunningAgent;

    before(async () => {
      const netns = await makeNetns('istio-defaults');
      cleanup.defer(() => netns.remove());
      podIp = netns.hostIp.replace(/\d+$/, (last) => String(Number(last) + 1));
      const istiod = await startIstiodPeers(cleanup, netns.hostIp);
      ({ ca, peer } = istiod);
      const dir = await tempDir(cleanup, 'pilot-agent-istio-pod-');
      const hosts = await podRoot(dir, istiod.root, netns.hostIp);
      agent = await startAgent({
        injectedOnly: true,
        discoveryAddress: '',
        args: injectedArgs,
        env: injectedEnv(podIp, netns.hostIp),
        cwd: dir,
        dir,
        wrap: await podMountWrap(netns.name, hosts),
      });
      deferStop(cleanup, agent, (result) => assert.equal(result.exitCode, 0, agent.stderr()));
      await waitReady(`http://${podIp}:15021/healthz/ready`, 60_000);
    });

    it("gets a workload certificate from istiod.istio-system.svc:15012 over TLS, with the pod's token", () => {
      assert.ok(
        ca.log.entries.some((entry) => entry.event === 'request' && entry.identity === identity && entry.serial),
        "the CA issued the pod's certificate",
      );
    });

    it("sends the node as Istio's agent does", async () => {
      const node = await peer.log.waitFor((entry: PeerEvent) => entry.event === 'node', 10_000, 'the node at the xDS peer');
      assert.equal(node.node, `sidecar~${podIp}~reviews-v1-abc.default~default.svc.cluster.local`);
      assert.equal(node.cluster, 'reviews.default', 'the canonical service, not istio-proxy');
      assert.deepEqual(node.locality, { region: 'eu-west1', zone: 'eu-west1-b' }, "node.locality from the pod's locality label");
      const metadata = node.metadata as Record<string, unknown>;
      assert.equal((metadata.LABELS as Record<string, string>)['istio-locality'], 'eu-west1/eu-west1-b');
      assert.deepEqual(metadata.PILOT_SAN, [istiodName]);
      assert.deepEqual([metadata.METADATA_DISCOVERY, metadata.ENVOY_SKIP_DEPRECATED_LOGS, metadata.WORKLOAD_IDENTITY_SOCKET_FILE], ['false', 'true', 'socket']);
      const proxyConfig = metadata.PROXY_CONFIG as Record<string, unknown>;
      assert.deepEqual(
        [proxyConfig.discoveryAddress, proxyConfig.controlPlaneAuthPolicy, proxyConfig.statNameLength],
        [`${istiodName}:15012`, 'MUTUAL_TLS', 189],
      );
    });

    it("sends the ClusterID in the xDS call's metadata as Istio's agent does", async () => {
      const call = await peer.log.waitFor((entry: PeerEvent) => entry.event === 'call_metadata', 10_000, "the xDS call's metadata");
      assert.equal((call.metadata as Record<string, string>).clusterid, 'Kubernetes', 'istiod picks the cluster that checks the token by it');
    });

    it("answers Prometheus's gzip scrapes, and Node warns of nothing meanwhile", async () => {
      for (let round = 0; round < 3; round++) {
        const answer = await fetch(`http://${podIp}:15020/stats/prometheus`, { headers: { 'accept-encoding': 'gzip' }, signal: AbortSignal.timeout(10_000) });
        assert.equal([answer.status, answer.headers.get('content-encoding')].join(' '), '200 gzip');
        assert.match(await answer.text(), /^envoy_server_live/m);
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
      assert.doesNotMatch(agent.stderr(), /\(node:\d+\) \w*Warning/, "Node's own warnings on stderr");
    });

    it('logs nothing at warn or above', () => {
      // A healthy default pod logs nothing at warn or above (pino: warn is 40).
      assert.deepEqual(
        agent.log.entries.filter((entry) => Number(entry.level) >= 40).map((entry) => entry.msg),
        [],
      );
    });
  });
});
