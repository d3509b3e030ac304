import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GrpcStatus } from '../../grpc/grpc-status.ts';
import { lenField } from '../../grpc/proto-wire.ts';
import type { XdsMode } from '../../discovery/wire.ts';
import { FakeAdsStream } from './fake-ads-stream.ts';
import { fakeRelayContext, recordingLogger } from './fake-relay-context.ts';
import { FakeUpstream } from './fake-upstream.ts';
import { RelayStream } from './relay-stream.ts';

/**
 * A discovery server that ends the call with trailers and sends no
 * RST_STREAM (legal HTTP/2: its side is closed, ours stays open) ends the
 * stream as any other upstream end: the relay must not wait for a 'close'
 * that never comes while Envoy sits on a dead stream.
 */
const clusterType = 'type.googleapis.com/envoy.config.cluster.v3.Cluster';
const response = (version: string, nonce: string) => Buffer.concat([lenField(1, version), lenField(4, clusterType), lenField(5, nonce)]);
const settle = () => new Promise((resolve) => setImmediate(resolve));

async function relay(mode: XdsMode = 'sotw') {
  const kit = fakeRelayContext({});
  const upstream = kit.script[0] as FakeUpstream;
  const ads = new FakeAdsStream();
  const { logger, lines } = recordingLogger();
  const stream = new RelayStream({ id: 7, mode, ads, context: kit.context, logger });
  const done = stream.run();
  await settle();
  return { ...kit, ads, stream, done, lines, upstream };
}

describe('RelayStream: a call ended by trailers without RST_STREAM', () => {
  const rows: { name: string; mode?: XdsMode; act: (upstream: FakeUpstream) => void; reason: string; details: RegExp }[] = [
    { name: 'OK', act: (upstream) => upstream.trailersWithoutReset(GrpcStatus.OK), reason: 'upstream_closed', details: /ended the stream: OK$/ },
    {
      name: 'an error status',
      act: (upstream) => upstream.trailersWithoutReset(GrpcStatus.RESOURCE_EXHAUSTED, 'too many'),
      reason: 'upstream_error',
      details: /ended the stream: RESOURCE_EXHAUSTED too many$/,
    },
    {
      name: 'Trailers-Only UNIMPLEMENTED on Delta',
      mode: 'delta',
      act: (upstream) => (upstream.answer({ ':status': 200, 'grpc-status': String(GrpcStatus.UNIMPLEMENTED) }), upstream.call.emit('end')),
      reason: 'delta_unsupported',
      details: /does not implement Delta xDS$/,
    },
  ];
  for (const row of rows) {
    it(`${row.name}: Envoy's call is finished UNAVAILABLE (${row.reason}) and the upstream call closed`, async () => {
      const s = await relay(row.mode);
      if (!row.mode) s.upstream.answer();
      row.act(s.upstream);
      await settle();
      assert.equal(s.ads.finished?.status, GrpcStatus.UNAVAILABLE, "Envoy's call is ended, so Envoy opens a new one");
      assert.match(s.ads.finished.details, row.details);
      assert.equal(await s.done, row.reason);
      assert.equal(s.upstream.closes, 1);
    });
  }

  it('what came before the trailers reaches Envoy first, and a late close changes nothing', async () => {
    const s = await relay();
    s.upstream.answer();
    s.upstream.respond(response('v1', 'n1'));
    s.upstream.trailersWithoutReset(GrpcStatus.OK);
    await settle();
    assert.deepEqual(s.ads.messages(), [response('v1', 'n1')]);
    assert.equal(await s.done, 'upstream_closed');
    s.upstream.closeCall(0);
    await settle();
    assert.equal(s.lines.filter((line) => line.msg === 'xDS stream ended').length, 1);
  });

  it('a server that ends its side with no status at all is an error', async () => {
    const s = await relay();
    s.upstream.answer();
    s.upstream.call.emit('end');
    await settle();
    assert.match(s.ads.finished?.details ?? '', /ended the stream: it ended its side without a status$/);
    assert.equal(await s.done, 'upstream_error');
  });
});
