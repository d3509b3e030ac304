/**
 * Pods of every IP shape, probed as the kubelet probes them: from the node
 * (the root namespace) on the pod's own address, never over loopback. An
 * IPv6-only pod must answer readiness and Prometheus on its IPv6 address; a
 * dual-stack pod with ISTIO_DUAL_STACK on both of its addresses.
 */
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { execa } from 'execa';
import { startAgent } from '../support/agent.ts';
import { deferStop, tempDir } from '../support/cleanup.ts';
import { makeFamilyNetns, type FamilyNetns } from '../support/family-netns.ts';
import { netnsSkipReason } from '../support/netns.ts';
import { startPeer } from '../support/peer.ts';
import { agentBin, nodeBin } from '../support/paths.ts';
import { pollUntil } from '../support/poll.ts';
import { simpleHttpService } from '../support/resources.ts';

const skip = await netnsSkipReason();

/** One GET from the root namespace; a refused or reset connection is status 0. */
async function get(host: string, port: number, path: string): Promise<number> {
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}${path}`;
  return fetch(url, { signal: AbortSignal.timeout(3000) }).then((response) => response.status, () => 0);
}

/** A pod of the given shape running the agent (its discovery server on the node's end of the link), undone by `undo`. */
async function startPodAgent(undo: AsyncDisposableStack, pod: FamilyNetns, podIp: string, env: Record<string, string> = {}, extraArgs: string[] = []) {
  const node = pod.v6 ? `[${pod.v6.host}]` : pod.v4!.host;
  const peer = await startPeer(simpleHttpService({ listenerPort: 18_080, upstreamPort: 18_081 }), { address: `${node}:0` });
  undo.defer(() => peer.stop());
  const args = ['--ip', podIp, '--statusPort', '15020', '--readinessPort', '15021', '--prometheusPort', '15090', ...extraArgs];
  const agent = await startAgent({ discoveryAddress: peer.address, wrap: pod.exec, args, env });
  deferStop(undo, agent);
  return agent;
}

/** Admin's address and the prometheus_stats cluster's endpoint, as epoch 0's bootstrap renders them. */
async function adminHosts(dir: string): Promise<{ admin: string; stats: string }> {
  type Address = { socket_address: { address: string } };
  type Cluster = { name: string; load_assignment: { endpoints: { lb_endpoints: { endpoint: { address: Address } }[] }[] } };
  const bootstrap = JSON.parse(await readFile(join(dir, 'config', 'envoy-rev0.json'), 'utf8')) as {
    admin: { address: Address }; static_resources: { clusters: Cluster[] };
  };
  const stats = bootstrap.static_resources.clusters.find((cluster) => cluster.name === 'prometheus_stats')!;
  return { admin: bootstrap.admin.address.socket_address.address, stats: stats.load_assignment.endpoints[0]!.lb_endpoints[0]!.endpoint.address.socket_address.address };
}

const ready = (host: string) =>
  pollUntil(() => get(host, 15_021, '/healthz/ready'), { what: `readiness on ${host}:15021 from the node`, timeoutMs: 30_000, accept: (s) => s === 200 });

describe('pods of every IP shape are probed on their own addresses', { skip }, () => {
  it('an IPv6-only pod (2001:2::/48) answers readiness and Prometheus on its IPv6 address', async () => {
    await using undo = new AsyncDisposableStack();
    const pod = await makeFamilyNetns('v6only', { v4: false, v6: true });
    undo.defer(() => pod.remove());
    await startPodAgent(undo, pod, pod.v6!.pod);
    await ready(pod.v6!.pod);
    assert.equal(await get(pod.v6!.pod, 15_090, '/stats/prometheus'), 200);
  });

  it('an IPv6-only pod puts Envoy\'s admin on ::1, as Istio\'s localhost, and the agent\'s calls to it (readiness, merged stats, request) reach it there', async () => {
    await using undo = new AsyncDisposableStack();
    const pod = await makeFamilyNetns('v6admin', { v4: false, v6: true });
    undo.defer(() => pod.remove());
    // A netns always has 127.0.0.1 on lo: Istio keys admin's address off the pod's IPs, and so must the agent.
    const agent = await startPodAgent(undo, pod, pod.v6!.pod);
    // Readiness asks admin whether Envoy is LIVE: only an agent that calls ::1 turns ready.
    await ready(pod.v6!.pod);
    assert.deepEqual(await adminHosts(agent.dir), { admin: '::1', stats: '::1' });
    const merged = await fetch(`http://[${pod.v6!.pod}]:15020/stats/prometheus`, { signal: AbortSignal.timeout(5000) }).then((r) => r.text());
    assert.match(merged, /^envoy_server_live\b/m, 'the status port merges Envoy\'s stats, scraped from admin on ::1');
    const request = await execa(pod.exec[0]!, [...pod.exec.slice(1), nodeBin, agentBin, 'request', 'GET', '/ready', '--debug-port', String(agent.adminPort)], { reject: false, timeout: 30_000 });
    assert.equal(request.exitCode, 0, request.stderr);
    assert.equal(request.stdout.trim(), 'LIVE');
  });

  it('a dual-stack pod with ISTIO_DUAL_STACK answers readiness and Prometheus on its IPv4 and its IPv6 address', async () => {
    await using undo = new AsyncDisposableStack();
    const pod = await makeFamilyNetns('dual', { v4: true, v6: true });
    undo.defer(() => pod.remove());
    await startPodAgent(undo, pod, pod.v4!.pod, { ISTIO_DUAL_STACK: 'true' });
    for (const host of [pod.v4!.pod, pod.v6!.pod]) {
      await ready(host);
      assert.equal(await get(host, 15_090, '/stats/prometheus'), 200, `Prometheus on ${host}`);
    }
  });

  it('an IPv6-only pod with a second IPv4 network excluded by traffic.sidecar.istio.io/excludeInterfaces still answers on its IPv6 address', async () => {
    await using undo = new AsyncDisposableStack();
    const pod = await makeFamilyNetns('excluded', { v4: false, v6: true, secondNetwork: true });
    undo.defer(() => pod.remove());
    const podInfo = await tempDir(undo, 'pod-info-');
    await writeFile(join(podInfo, 'annotations'), `traffic.sidecar.istio.io/excludeInterfaces="${pod.second!.name}"\n`);
    await startPodAgent(undo, pod, pod.v6!.pod, {}, ['--podInfoDir', podInfo]);
    await ready(pod.v6!.pod);
  });

  it('METRICS_LOCALHOST_ACCESS_ONLY keeps Prometheus off the pod network while readiness stays on it', async () => {
    await using undo = new AsyncDisposableStack();
    const pod = await makeFamilyNetns('localmetrics', { v4: true, v6: false });
    undo.defer(() => pod.remove());
    await startPodAgent(undo, pod, pod.v4!.pod, { METRICS_LOCALHOST_ACCESS_ONLY: 'true' });
    await ready(pod.v4!.pod);
    assert.equal(await get(pod.v4!.pod, 15_090, '/stats/prometheus'), 0, '15090 refused from the pod network');
  });
});
