/**
 * A VM through a WorkloadGroup with auto-registration (KUBE.md, "A VM through a WorkloadGroup"): the files
 * `istioctl x workload entry configure` writes (cluster.env, mesh.yaml as the mesh config, the root and the
 * token) laid out under the VM's root, and the agent booted as Istio's istio-start.sh boots it: through
 * test/support/vm-start.sh, which does what that script does for the agent (YAML PROXY_CONFIG with
 * MUTUAL_TLS, PROV_CERT and OUTPUT_CERTS both ./etc/certs, uid 1337), in a network namespace whose
 * /etc/hosts names istiod. The project's peers stand in for istiod: the xDS peer records the node and the
 * health reports (istio.v1.HealthInformation), the CA peer checks the token and the identity. The script's
 * iptables step runs too (the checkout's istio-iptables with cluster.env's variables, as root).
 */
import assert from 'node:assert/strict';
import { chmod, chown, mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { before, describe, it } from 'node:test';
import { execa } from 'execa';
import { startAgent, type RunningAgent } from '../support/agent.ts';
import type { CaPeer } from '../support/ca-peer.ts';
import { identity, token } from '../support/ca-rig.ts';
import { suiteCleanup, tempDir } from '../support/cleanup.ts';
import { istiodName, podMountWrap, startIstiodPeers } from '../support/istiod-peers.ts';
import { iptablesSkipReason } from '../support/iptables-pods.ts';
import { makeNetns, netnsSkipReason } from '../support/netns.ts';
import { repoRoot, uidCannotRunCheckout } from '../support/paths.ts';
import type { Peer, PeerEvent } from '../support/peer.ts';
import { pollUntil } from '../support/poll.ts';
const proxyUid = 1337;
const skip = (await netnsSkipReason()) ?? uidCannotRunCheckout(proxyUid) ?? (await iptablesSkipReason());

/** cluster.env as istioctl writes it for WorkloadGroup vm (namespace default, service account app, port 8080, --autoregister). */
const clusterEnv = `CANONICAL_REVISION=latest
CANONICAL_SERVICE=vm
ISTIO_INBOUND_PORTS=8080
ISTIO_LOCAL_EXCLUDE_PORTS=22,15090,15021,15020
ISTIO_METAJSON_LABELS='{"app":"vm","service.istio.io/canonical-name":"vm","service.istio.io/canonical-revision":"latest"}'
ISTIO_META_AUTO_REGISTER_GROUP=vm
ISTIO_META_CLUSTER_ID=Kubernetes
ISTIO_META_DNS_CAPTURE=true
ISTIO_META_POD_PORTS='[{"name":"http","containerPort":8080}]'
ISTIO_META_WORKLOAD_NAME=vm
ISTIO_NAMESPACE=default
ISTIO_SERVICE=vm.default
ISTIO_SERVICE_CIDR='*'
POD_NAMESPACE=default
SERVICE_ACCOUNT=app
TRUST_DOMAIN=cluster.local
`;

/** mesh.yaml: the mesh's defaultConfig with the group's probe as readinessProbe, keys sorted as istioctl writes them. */
const meshYaml = `defaultConfig:
  discoveryAddress: ${istiodName}:15012
  proxyMetadata:
    CANONICAL_REVISION: latest
    CANONICAL_SERVICE: vm
    ISTIO_META_AUTO_REGISTER_GROUP: vm
    ISTIO_META_CLUSTER_ID: Kubernetes
    ISTIO_META_DNS_CAPTURE: 'true'
    ISTIO_META_WORKLOAD_NAME: vm
    POD_NAMESPACE: default
    SERVICE_ACCOUNT: app
    TRUST_DOMAIN: cluster.local
  readinessProbe:
    httpGet:
      path: /ready
      port: 8080
    periodSeconds: 1
`;

/** The VM's root as the VM guide lays it out; the directories the agent writes are the istio-proxy user's. */
async function vmRoot(dir: string, root: string, hostIp: string): Promise<string> {
  const files: [string, string][] = [
    ['var/lib/istio/envoy/cluster.env', clusterEnv],
    ['etc/istio/config/mesh', meshYaml],
    ['etc/certs/root-cert.pem', root],
    ['var/run/secrets/tokens/istio-token', token],
    ['hosts', `127.0.0.1 localhost\n${hostIp} ${istiodName}\n`],
  ];
  for (const [path, text] of files) {
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), text);
  }
  await chmod(dir, 0o755);
  for (const owned of ['etc/certs', 'etc/istio/proxy', 'var/run/secrets/workload-spiffe-uds', 'var/lib/istio/data']) {
    await mkdir(join(dir, owned), { recursive: true });
    await chown(join(dir, owned), proxyUid, proxyUid);
  }
  return join(dir, 'hosts');
}

/** The VM's application: answers /ready on 8080. */
const appScript = "require('node:http').createServer((q, s) => s.end('ok')).listen(8080, process.argv[1])";

describe('a VM through a WorkloadGroup with auto-registration, booted as istio-start.sh boots it', { skip, timeout: 150_000 }, () => {
  const cleanup = suiteCleanup();
  let vmIp: string;
  let netnsName: string;
  let dir: string;
  let peer: Peer;
  let ca: CaPeer;
  let agent: RunningAgent;

  before(async () => {
    const netns = await makeNetns('vm');
    cleanup.defer(() => netns.remove());
    netnsName = netns.name;
    vmIp = netns.hostIp.replace(/\d+$/, (last) => String(Number(last) + 1));
    // DNS capture is on (cluster.env): the VM is ready once the name table arrived.
    const nameTable = { 'vm.default.svc.cluster.local': { ips: [vmIp], registry: 'Kubernetes', namespace: 'default' } };
    const istiod = await startIstiodPeers(cleanup, netns.hostIp, nameTable);
    ({ ca, peer } = istiod);
    const app = execa('ip', ['netns', 'exec', netns.name, process.execPath, '-e', appScript, vmIp], { reject: false, stdio: 'ignore' });
    cleanup.defer(async () => void (app.kill('SIGKILL'), await app));
    dir = await tempDir(cleanup, 'pilot-agent-vm-');
    // Envoy where Istio's VM package puts it, as in the pod's image.
    const wrap = await podMountWrap(netns.name, await vmRoot(dir, istiod.root, netns.hostIp));
    agent = await startAgent({ injectedOnly: true, discoveryAddress: '', env: {}, cwd: dir, dir, wrap: [...wrap, join(repoRoot, 'test/support/vm-start.sh')] });
    cleanup.defer(() => agent.stop('SIGKILL').then(() => undefined, () => undefined));
  });

  it('is ready, and registers with the node of a WorkloadGroup VM: a YAML PROXY_CONFIG reaches istiod as the object', async () => {
    const ready = () =>
      fetch(`http://${vmIp}:15021/healthz/ready`, { signal: AbortSignal.timeout(2_000) }).then(async (answer) => `${answer.status} ${await answer.text()}`, String);
    await pollUntil(ready, { what: 'the VM ready', timeoutMs: 60_000, intervalMs: 200, accept: (answer) => answer.startsWith('200'), show: String });
    const node = await peer.log.waitFor((entry: PeerEvent) => entry.event === 'node', 10_000, 'the node at the xDS peer');
    const metadata = node.metadata as Record<string, unknown>;
    assert.equal(metadata.AUTO_REGISTER_GROUP, 'vm');
    assert.equal(node.cluster, 'vm.default');
    const proxyConfig = metadata.PROXY_CONFIG as Record<string, unknown>;
    assert.deepEqual([proxyConfig.serviceCluster, proxyConfig.controlPlaneAuthPolicy], ['vm.default', 'MUTUAL_TLS']);
    assert.deepEqual(proxyConfig.readinessProbe, { httpGet: { path: '/ready', port: 8080 }, periodSeconds: 1 });
  });

  it('captures as the script\'s iptables step sets it: inbound 8080 to 15006, outbound to 15001', async () => {
    const nat = (await execa('ip', ['netns', 'exec', netnsName, 'iptables-save', '-t', 'nat'])).stdout;
    assert.match(nat, /-A ISTIO_INBOUND -p tcp -m tcp --dport 8080 -j ISTIO_IN_REDIRECT/);
    assert.match(nat, /-A ISTIO_IN_REDIRECT -p tcp -j REDIRECT --to-ports 15006/);
    assert.match(nat, /-A ISTIO_REDIRECT -p tcp -j REDIRECT --to-ports 15001/);
  });

  it('gets its certificate with the token, trusting $PROV_CERT/root-cert.pem, and writes OUTPUT_CERTS there without restarting Envoy', async () => {
    assert.ok(ca.log.entries.some((entry) => entry.event === 'request' && entry.identity === identity && entry.serial), 'the CA issued the VM\'s certificate');
    await agent.log.waitFor((entry) => /own OUTPUT_CERTS write; no restart/.test(entry.msg), 30_000, 'the agent seeing its own OUTPUT_CERTS write');
    assert.match(await readFile(join(dir, 'etc/certs/cert-chain.pem'), 'utf8'), /BEGIN CERTIFICATE/);
    assert.equal(agent.log.entries.filter((entry) => entry.msg === 'envoy started').length, 1, 'one epoch only');
  });

  it('reports the group\'s probe healthy to the discovery server (istio.v1.HealthInformation)', async () => {
    await peer.log.waitFor((entry: PeerEvent) => entry.event === 'health' && entry.healthy === true, 30_000, 'a healthy report');
    assert.deepEqual(agent.log.entries.filter((entry) => Number(entry.level) >= 40).map((entry) => entry.msg), [], 'a healthy VM logs no warning');
  });

  it('on SIGTERM exits 0, leaves no Envoy, and closes every stream it opened to the discovery server', async () => {
    const result = await agent.stop('SIGTERM');
    assert.equal(result.exitCode, 0, agent.stderr());
    const opened = peer.log.entries.filter((entry) => entry.event === 'stream_open').map((entry) => entry.stream);
    await pollUntil(() => peer.log.entries.filter((entry) => entry.event === 'stream_closed').map((entry) => entry.stream), {
      what: 'every stream closed at the discovery server', timeoutMs: 15_000, intervalMs: 100,
      accept: (closed) => opened.every((stream) => closed.includes(stream)), show: (closed) => `opened ${opened.join(',')}, closed ${closed.join(',')}`,
    });
  });
});
