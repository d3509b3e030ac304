/**
 * The node's locality from the cloud's metadata server, as Istio's agent
 * takes it when no pod label gives one: a pod whose agent runs with
 * CLOUD_PLATFORM=gcp asks GCP's metadata server (moved by GCE_METADATA_HOST
 * to a fake one on the node's end of the pod's link; the real 169.254.169.254
 * is never used here) and Envoy's node.locality says what it answered. A
 * server that never answers costs the start its bound, then one warning.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { startAgent } from '../support/agent.ts';
import { deferStop } from '../support/cleanup.ts';
import { makeFamilyNetns } from '../support/family-netns.ts';
import { netnsSkipReason } from '../support/netns.ts';
import { startPeer } from '../support/peer.ts';
import { pollUntil } from '../support/poll.ts';
import { simpleHttpService } from '../support/resources.ts';

const skip = await netnsSkipReason();

/** A fake GCP metadata server on `host`: the zone for the flavored request, or silence. */
async function fakeMetadata(undo: AsyncDisposableStack, host: string, answer: boolean): Promise<{ address: string; asked: () => number }> {
  let asked = 0;
  const server: Server = createServer((request, response) => {
    asked++;
    if (!answer) return;
    const ok = request.headers['metadata-flavor'] === 'Google' && request.url === '/computeMetadata/v1/instance/zone';
    response.writeHead(ok ? 200 : 404).end(ok ? 'projects/42/zones/europe-west4-b' : '');
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  undo.defer(() => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))));
  return { address: `${host}:${(server.address() as AddressInfo).port}`, asked: () => asked };
}

async function startPod(undo: AsyncDisposableStack, label: string, answer: boolean, labels = '') {
  const pod = await makeFamilyNetns(label, { v4: true, v6: false });
  undo.defer(() => pod.remove());
  const metadata = await fakeMetadata(undo, pod.v4!.host, answer);
  const peer = await startPeer(simpleHttpService({ listenerPort: 18_080, upstreamPort: 18_081 }), { address: `${pod.v4!.host}:0` });
  undo.defer(() => peer.stop());
  const env = { CLOUD_PLATFORM: 'gcp', GCE_METADATA_HOST: metadata.address, ...(labels ? { ISTIO_METAJSON_LABELS: labels } : {}) };
  const agent = await startAgent({ discoveryAddress: peer.address, wrap: pod.exec, args: ['--ip', pod.v4!.pod], env });
  deferStop(undo, agent);
  await pollUntil(() => readFile(join(agent.dir, 'config', 'envoy-rev0.json'), 'utf8').catch(() => ''), {
    what: 'epoch 0\'s bootstrap', timeoutMs: 30_000, accept: (text) => text !== '',
  });
  const bootstrap = JSON.parse(await readFile(join(agent.dir, 'config', 'envoy-rev0.json'), 'utf8')) as { node: { locality?: Record<string, string> } };
  return { agent, metadata, locality: bootstrap.node.locality };
}

describe('the node\'s locality from the platform\'s metadata server', { skip }, () => {
  it('CLOUD_PLATFORM=gcp: Envoy\'s node.locality is the zone GCP\'s metadata server (GCE_METADATA_HOST) names, and its region', async () => {
    await using undo = new AsyncDisposableStack();
    const { locality, metadata } = await startPod(undo, 'gcp', true);
    assert.deepEqual(locality, { region: 'europe-west4', zone: 'europe-west4-b' });
    assert.equal(metadata.asked(), 1);
  });

  it('a pod label\'s locality wins: the metadata server is not asked', async () => {
    await using undo = new AsyncDisposableStack();
    const { locality, metadata } = await startPod(undo, 'gcplabel', true, JSON.stringify({ 'topology.istio.io/locality': 'r1.z1' }));
    assert.deepEqual(locality, { region: 'r1', zone: 'z1' });
    assert.equal(metadata.asked(), 0);
  });

  it('a metadata server that never answers costs the start its bound, then one warning and no locality', async () => {
    await using undo = new AsyncDisposableStack();
    const { locality, agent } = await startPod(undo, 'gcpsilent', false);
    assert.deepEqual(locality, {});
    const warnings = agent.log.entries.filter((entry) => entry.msg === 'no locality from the platform');
    assert.equal(warnings.length, 1);
    assert.match(String(warnings[0]!.problem), /no answer within 5000 ms/);
  });
});
