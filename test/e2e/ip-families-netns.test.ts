/**
 * Pods of every IP shape, probed as the kubelet probes them: from the node
 * (the root namespace) on the pod's own address, never over loopback. An
 * IPv6-only pod must answer readiness and Prometheus on its IPv6 address; a
 * dual-stack pod with ISTIO_DUAL_STACK on both of its addresses.
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { startAgent } from '../support/agent.ts';
import { deferStop, tempDir } from '../support/cleanup.ts';
import { makeFamilyNetns, type FamilyNetns } from '../support/family-netns.ts';
import { netnsSkipReason } from '../support/netns.ts';
import { startPeer } from '../support/peer.ts';
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
