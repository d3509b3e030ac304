import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GrpcStatus } from '../../grpc/grpc-status.ts';
import { lenField } from '../../grpc/proto-wire.ts';
import type { Registry } from '../../metrics/index.ts';
import { LastKnownGoodConfig } from '../last-known-good/config.ts';
import { extensionConfigType, nameTableType } from '../../discovery/type-urls.ts';
import { readRequest } from '../../discovery/wire.ts';
import { FakeAdsStream } from './fake-ads-stream.ts';
import { fakeRelayContext, recordingLogger } from './fake-relay-context.ts';
import { FakeUpstream } from './fake-upstream.ts';
import { RelayStream } from './relay-stream.ts';

const listenerType = 'type.googleapis.com/envoy.config.listener.v3.Listener';
const clusterType = 'type.googleapis.com/envoy.config.cluster.v3.Cluster';
const request = (type: string, nonce?: string) => Buffer.concat([lenField(4, type), ...(nonce ? [lenField(5, nonce)] : [])]);
const response = (type: string, version: string, nonce: string, payload = 'x') =>
  Buffer.concat([lenField(1, version), lenField(2, Buffer.concat([lenField(1, type), lenField(2, payload)])), lenField(4, type), lenField(5, nonce)]);
const settle = async () => {
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
};
const gauge = async (registry: Registry, name: string) => (await registry.getSingleMetric(name)!.get()).values[0]?.value;

function start(kit: ReturnType<typeof fakeRelayContext>, ads = new FakeAdsStream()) {
  const { logger, lines } = recordingLogger();
  const stream = new RelayStream({ id: 3, mode: 'sotw', ads, context: kit.context, logger });
  return { ads, stream, lines, done: stream.run() };
}

describe('RelayStream: the agent\'s own stages on a stream', () => {
  it('with DNS on: subscribes to the name table once Envoy asks for listeners, and keeps NDS responses from Envoy', async () => {
    const upstream = new FakeUpstream();
    const kit = fakeRelayContext({ upstreams: [upstream] });
    const tables: Buffer[] = [];
    kit.context.nameTables = { accept: async (table) => void tables.push(table) };
    const { ads } = start(kit);
    await settle();
    upstream.answer();
    ads.request(request(listenerType));
    assert.deepEqual(upstream.messages().map((message) => readRequest(message, 'sotw').typeUrl), [listenerType, nameTableType]);
    upstream.respond(response(nameTableType, 'v1', 'n1'));
    upstream.respond(response(listenerType, 'v1', 'l1'));
    await settle();
    assert.deepEqual(ads.messages(), [response(listenerType, 'v1', 'l1')]);
    assert.equal(tables.length, 1);
  });

  it('with Wasm conversion on: ECDS responses reach Envoy converted, once Envoy asked for ECDS', async () => {
    const upstream = new FakeUpstream();
    const kit = fakeRelayContext({ upstreams: [upstream] });
    kit.context.ecds = async () => ({ message: response(extensionConfigType, 'v1', 'e1', 'converted') });
    const { ads } = start(kit);
    await settle();
    upstream.answer();
    ads.request(request(extensionConfigType));
    upstream.respond(response(extensionConfigType, 'v1', 'e1'));
    await settle();
    assert.deepEqual(ads.messages(), [response(extensionConfigType, 'v1', 'e1', 'converted')]);
  });

  it('with Wasm conversion on: a malformed response ends the stream as a bad upstream frame', async () => {
    const upstream = new FakeUpstream();
    const kit = fakeRelayContext({ upstreams: [upstream] });
    kit.context.ecds = async () => ({ message: undefined });
    const { ads, done } = start(kit);
    await settle();
    upstream.answer();
    ads.request(request(extensionConfigType));
    upstream.bytes(Buffer.from([1, 0, 0, 0, 1, 0]));
    assert.equal(await done, 'bad_upstream_frame');
    assert.match(ads.finished!.details, /^malformed response from the discovery server: /);
  });
});

describe('RelayStream: dial and phases', () => {
  it('Envoy gone before the dial settles: the call the dial brings is closed at once', async () => {
    const upstream = new FakeUpstream();
    const kit = fakeRelayContext({ upstreams: [upstream] });
    const ads = new FakeAdsStream();
    ads.reset();
    const { done } = start(kit, ads);
    assert.equal(await done, 'envoy_closed');
    await settle();
    assert.equal(upstream.closes, 1);
    assert.deepEqual(kit.told.dialed, []);
  });

  it('a relayed stream shows its credential and counts its upstream as connected while it lasts', async () => {
    const upstream = new FakeUpstream();
    const kit = fakeRelayContext({ upstreams: [upstream] });
    const { stream, ads, done } = start(kit);
    await settle();
    assert.equal(stream.upstreamCredential, 'certificate+token');
    assert.equal(await gauge(kit.registry, 'istio_agent_xds_proxy_upstreams_connected'), 1);
    ads.reset();
    await done;
    assert.equal(await gauge(kit.registry, 'istio_agent_xds_proxy_upstreams_connected'), 0);
  });

  it('a failed dial with nothing kept: dial_failed, counted as a DIAL failure, Envoy told why', async () => {
    const kit = fakeRelayContext({ upstreams: [new Error('connect ECONNREFUSED')] });
    const { ads, done, lines } = start(kit);
    assert.equal(await done, 'dial_failed');
    assert.deepEqual(ads.finished, { status: GrpcStatus.UNAVAILABLE, details: 'cannot reach the discovery server: connect ECONNREFUSED' });
    assert.deepEqual(kit.told.dialed, [false]);
    assert.equal(lines.find((line) => line.msg === 'xDS stream ended')?.level, 40);
    assert.deepEqual(
      (await kit.registry.getSingleMetric('istio_agent_xds_proxy_upstream_failures_total')!.get()).values.map((value) => value.labels['code']),
      ['DIAL'],
    );
  });

  it('an ACK is not a NACK: no NACK line', async () => {
    const upstream = new FakeUpstream();
    const { ads, lines } = start(fakeRelayContext({ upstreams: [upstream] }));
    await settle();
    upstream.answer();
    ads.request(request(clusterType));
    upstream.respond(response(clusterType, 'v1', 'n1'));
    ads.request(request(clusterType, 'n1'));
    assert.equal(lines.some((line) => line.msg === 'Envoy rejected a response (NACK)'), false);
  });
});

describe('RelayStream: served from last-known-good config', () => {
  async function served(options: { lastDialFailed?: boolean } = {}) {
    const lastKnownGood = new LastKnownGoodConfig();
    lastKnownGood.keepSotw(clusterType, 'v1', [response(clusterType, 'v1', 'k1')], 0);
    const kit = fakeRelayContext({ upstreams: [new Error('refused')], lastKnownGood, ...options });
    const started = start(kit);
    await settle();
    return { ...kit, ...started };
  }

  it('opens the call at once and answers from what is kept', async () => {
    const { ads, stream } = await served();
    assert.equal(ads.opened, true);
    assert.equal(stream.upstreamState, 'last-known-good');
    ads.request(request(clusterType));
    assert.equal(ads.messages().length, 1);
  });

  it('after a failed dial, a new stream is served without dialling', async () => {
    const { told, stream } = await served({ lastDialFailed: true });
    assert.deepEqual(told.dials, []);
    assert.equal(stream.upstreamState, 'last-known-good');
  });

  it('Envoy half-closing ends it (envoy_closed) and stops the redials and the gauge', async () => {
    const { ads, done, clock, told, registry } = await served();
    assert.equal(await gauge(registry, 'istio_agent_xds_last_known_good_streams'), 1);
    ads.end();
    assert.equal(await done, 'envoy_closed');
    assert.equal(await gauge(registry, 'istio_agent_xds_last_known_good_streams'), 0);
    clock.advance(60_000);
    await settle();
    assert.equal(told.dials.length, 1, 'no redial after the end');
  });

  it('a redial is told to the relay (dialed) and, when it reaches the server, kept as the next stream\'s spare', async () => {
    const { done, clock, told, script } = await served();
    script.push(new Error('still down'), new FakeUpstream());
    clock.advance(1_000);
    await settle();
    clock.advance(2_000);
    await settle();
    assert.equal(await done, 'handed_over');
    assert.deepEqual(told.dialed, [false, false, true]);
    assert.equal(told.spares.length, 1);
  });
});
