/**
 * Prometheus scraping a pod's status port (15020, outside the capture) with
 * its default Accept, OpenMetrics ranked first (issue 44): the merged page
 * must be the text format, as Istio's agent serves Envoy's part. Rewritten as
 * OpenMetrics, Envoy's counters gained `_total` and clashed with its own
 * `…_total` counters: a strict parser refused the page.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { makePodNamespace, podSkipReason, requestThroughCapture, startMesh, startPodAgent, untilPodReady, type Mesh, type Pod } from '../support/pods.ts';
import { waitUntil } from '../support/poll.ts';
import { parsePrometheus } from '../support/prometheus.ts';

const skip = await podSkipReason();
const prometheusAccept = 'application/openmetrics-text;version=1.0.0;q=0.5,text/plain;version=0.0.4;q=0.4,*/*;q=0.1';

async function scrape(pod: Pod, accept: string): Promise<{ contentType: string; body: string }> {
  const response = await fetch(`http://${pod.ip}:15020/stats/prometheus`, { headers: { accept }, signal: AbortSignal.timeout(15_000) });
  assert.equal(response.status, 200);
  return { contentType: response.headers.get('content-type') ?? '', body: await response.text() };
}

describe("a pod's status port scraped with Prometheus's default Accept", { skip, timeout: 180_000 }, () => {
  let mesh: Mesh;
  before(async () => (mesh = await startMesh()));
  after(() => mesh?.close());

  it("serves the text format from the pod network: a strict parser takes it, Envoy's counters keep their names", async () => {
    await using cleanup = new AsyncDisposableStack();
    const netns = await makePodNamespace(mesh, 0);
    cleanup.defer(() => netns.remove());
    const pod = await startPodAgent(mesh, netns, 0);
    cleanup.defer(() => pod.stop());
    await untilPodReady(pod);
    await waitUntil('a request through the capture answered 200', () => requestThroughCapture(pod));
    const asked = await scrape(pod, prometheusAccept);
    assert.match(asked.contentType, /^text\/plain; version=0\.0\.4/);
    assert.ok(!asked.body.includes('# EOF'), 'no OpenMetrics end marker');
    const families = parsePrometheus(asked.body);
    assert.equal(families.get('istio_agent_epochs_started_total')?.type, 'COUNTER');
    for (const name of ['envoy_cluster_upstream_rq_total', 'envoy_cluster_upstream_cx_total']) assert.equal(families.get(name)?.type, 'COUNTER', name);
    const plain = await scrape(pod, 'text/plain');
    assert.deepEqual([...parsePrometheus(plain.body).keys()], [...families.keys()], 'the same families whatever the Accept');
  });
});
