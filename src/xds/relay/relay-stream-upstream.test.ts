import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GrpcStatus } from '../../grpc/grpc-status.ts';
import { lenField } from '../../grpc/proto-wire.ts';
import { FakeAdsStream } from './fake-ads-stream.ts';
import { fakeRelayContext, recordingLogger } from './fake-relay-context.ts';
import { FakeUpstream } from './fake-upstream.ts';
import { RelayStream } from './relay-stream.ts';

/** What the relay does with the upstream call's answer: when Envoy's call opens, what counts, and what comes too late. */
const clusterType = 'type.googleapis.com/envoy.config.cluster.v3.Cluster';
const response = (version: string, nonce: string) => Buffer.concat([lenField(1, version), lenField(4, clusterType), lenField(5, nonce)]);
const settle = () => new Promise((resolve) => setImmediate(resolve));

async function relay() {
  const kit = fakeRelayContext({});
  const upstream = kit.script[0] as FakeUpstream;
  const ads = new FakeAdsStream();
  const stream = new RelayStream({ id: 3, mode: 'sotw', ads, context: kit.context, logger: recordingLogger().logger });
  const done = stream.run();
  await settle();
  const counted = async (name: string) =>
    Object.fromEntries((await kit.registry.getSingleMetric(name)!.get()).values.map((value) => [Object.values(value.labels).join('/'), value.value]));
  return { ...kit, ads, stream, done, upstream, counted };
}

describe('RelayStream: the upstream call as Envoy sees it', () => {
  it('Envoy\'s call opens, and /debug/xds says open, only once the server answered the call', async () => {
    const s = await relay();
    assert.equal(s.stream.upstreamState, 'dialing');
    assert.equal(s.ads.opened, false);
    s.upstream.answer();
    await settle();
    assert.equal(s.stream.upstreamState, 'open');
    assert.equal(s.ads.opened, true);
    s.stream.stop();
    await s.done;
  });

  it('a Trailers-Only answer never opens Envoy\'s call: it is finished with the failure counted', async () => {
    const s = await relay();
    s.upstream.answer({ ':status': 200, 'grpc-status': String(GrpcStatus.PERMISSION_DENIED), 'grpc-message': 'no' });
    await settle();
    assert.equal(s.ads.opened, false);
    assert.equal(s.stream.upstreamState, 'dialing');
    s.upstream.closeCall();
    assert.equal(await s.done, 'upstream_error');
    assert.match(s.ads.finished?.details ?? '', /PERMISSION_DENIED no$/);
    assert.deepEqual(await s.counted('istio_agent_xds_proxy_upstream_failures_total'), { PERMISSION_DENIED: 1 });
  });

  it('each relayed response counts by type, with its bytes', async () => {
    const s = await relay();
    s.upstream.answer();
    s.upstream.respond(response('v1', 'n1'));
    s.upstream.respond(response('v2', 'n2'));
    await settle();
    assert.deepEqual(await s.counted('istio_agent_xds_proxy_responses'), { 'envoy.config.cluster.v3.Cluster': 2 });
    const bytes = await s.counted('istio_agent_xds_proxy_bytes_total');
    assert.equal(bytes['envoy.config.cluster.v3.Cluster/response'], 2 * response('v1', 'n1').length);
    s.stream.stop();
    await s.done;
  });

  it('once the stream is ending, what the server still sends is dropped: no response to Envoy, no failure counted', async () => {
    const s = await relay();
    s.stream.stop();
    s.upstream.answer({ ':status': 503 });
    s.upstream.respond(response('v1', 'n1'));
    await settle();
    assert.equal(await s.done, 'relay_stopped');
    assert.deepEqual(s.ads.messages(), []);
    assert.equal(s.ads.opened, false);
    assert.deepEqual(await s.counted('istio_agent_xds_proxy_upstream_failures_total'), {});
    assert.match(s.ads.finished?.details ?? '', /^the agent is stopping$/);
  });
});
