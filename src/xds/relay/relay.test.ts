import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { lenField } from '../../grpc/proto-wire.ts';
import { Registry } from '../../metrics/index.ts';
import { FakeClock } from '../../shared/clock.ts';
import { silentLogger } from '../../shared/log.ts';
import type { UpstreamOptions } from '../upstream/material.ts';
import type { UpstreamStream } from '../upstream/session.ts';
import { readRequest, type XdsMode } from '../../discovery/wire.ts';
import { FakeAdsStream } from './fake-ads-stream.ts';
import { FakeUpstream } from './fake-upstream.ts';
import { XdsRelay } from './relay.ts';

const clusterType = 'type.googleapis.com/envoy.config.cluster.v3.Cluster';
const subscribe = (node?: string) => Buffer.concat([...(node ? [lenField(2, lenField(1, node))] : []), lenField(4, clusterType)]);
const ack = (version: string, nonce: string) => Buffer.concat([lenField(1, version), lenField(4, clusterType), lenField(5, nonce)]);
const response = (version: string, nonce: string) => Buffer.concat([lenField(1, version), lenField(4, clusterType), lenField(5, nonce)]);
const settle = async () => {
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
};

/** An XdsRelay whose dials take the next scripted upstream (or fail with the next Error). */
function relay(script: (FakeUpstream | Error)[] = []) {
  const clock = new FakeClock();
  const registry = new Registry();
  const dials: XdsMode[] = [];
  const xds = new XdsRelay({
    socketPath: '/nonexistent/XDS', upstream: { address: { host: '198.18.0.1', port: 15012 } } as UpstreamOptions, registry, clock, logger: silentLogger,
    backoff: { initialMs: 1_000, multiplier: 2, jitter: 0, maxMs: 4_000 },
    dialUpstream: (mode) => {
      dials.push(mode);
      const next = script.shift() ?? new Error('connect ECONNREFUSED');
      return next instanceof Error ? Promise.reject(next) : Promise.resolve(next as UpstreamStream);
    },
  });
  const open = async (mode: XdsMode = 'sotw') => {
    const ads = new FakeAdsStream();
    const stream = xds.serve(mode, ads);
    await settle();
    return { ads, stream };
  };
  const metric = async (name: string) =>
    (await registry.getSingleMetric(name)!.get()).values.map((value) => [value.labels['type'] ?? value.labels['reason'] ?? '', value.value]);
  return { xds, clock, dials, open, metric, script };
}

/** A first stream that relays one response Envoy ACKs, so the relay keeps it; then the server goes away. */
async function keptThenLost(script: (FakeUpstream | Error)[]) {
  const first = new FakeUpstream();
  const kit = relay([first, ...script]);
  const { ads, stream } = await kit.open();
  first.answer();
  ads.request(subscribe('sidecar~a'));
  first.respond(response('v1', 'n1'));
  ads.request(ack('v1', 'n1'));
  first.trailers(14, 'gone');
  await stream.done;
  return kit;
}

describe('XdsRelay: the core over in-memory streams and a scripted upstream', () => {
  it('counts each stream and its ending once, in its own and in Istio\'s counters', async () => {
    const { open, metric, xds } = relay([new FakeUpstream()]);
    const { ads, stream } = await open();
    assert.equal(xds.debug().streams.length, 1);
    ads.reset();
    await stream.done;
    await settle();
    assert.deepEqual(xds.debug().terminations, { envoy_closed: 1 });
    assert.deepEqual(await metric('istio_agent_envoy_connection_terminations'), [['cancelled', 1]]);
    assert.deepEqual(await metric('istio_agent_istiod_connection_terminations'), []);
    assert.deepEqual(await metric('istio_agent_xds_proxy_streams'), [['', 0]]);
    assert.equal(xds.debug().streams.length, 0);
  });

  it("a later stream's first request without a node gets the node an earlier stream sent", async () => {
    const [one, two] = [new FakeUpstream(), new FakeUpstream()];
    const { open } = relay([one, two]);
    (await open()).ads.request(subscribe('sidecar~a'));
    (await open()).ads.request(subscribe());
    assert.deepEqual(readRequest(two.messages()[0]!, 'sotw').node, lenField(1, 'sidecar~a'));
  });

  it('a dial that fails with nothing kept ends the stream; after the server was reached it makes config unavailable, until a dial works', async () => {
    const { xds, open, script } = relay([new Error('refused'), new FakeUpstream(), new Error('refused')]);
    const told: boolean[] = [];
    xds.onGateChange((available) => told.push(available));
    assert.equal(xds.canConfigure(), true, 'before any dial');
    const { ads, stream } = await open();
    assert.equal(await stream.done, 'dial_failed');
    assert.equal(ads.finished?.status, 14);
    assert.equal(xds.canConfigure(), true, 'never reached: no Envoy got config through the relay');
    await open();
    assert.equal(await (await open()).stream.done, 'dial_failed');
    assert.equal(xds.canConfigure(), false);
    script.push(new FakeUpstream());
    await open();
    assert.equal(xds.canConfigure(), true);
    assert.deepEqual(told, [false, true]);
  });

  it('serves the kept config when the dial fails, and after a failed dial does not dial again for a new stream', async () => {
    const { open, dials, xds } = await keptThenLost([new Error('refused')]);
    const second = await open();
    assert.equal(second.stream.upstreamState, 'last-known-good');
    assert.equal(xds.canConfigure(), true, 'kept config covers what Envoy asked for');
    second.ads.request(subscribe());
    assert.deepEqual(second.ads.messages().map((message) => message.includes('v1')), [true]);
    assert.ok(xds.servingLastKnownGoodSince() !== undefined);
    const third = await open();
    assert.equal(third.stream.upstreamState, 'last-known-good');
    assert.equal(dials.length, 2, 'the third stream did not dial: the last dial failed');
  });

  it("the redial that reaches the server hands the stream over, and the next stream takes that connection (one dial, no more)", async () => {
    const redial = new FakeUpstream();
    const { open, dials, clock } = await keptThenLost([new Error('refused'), redial]);
    const served = await open();
    clock.advance(1_000);
    await settle();
    assert.equal(await served.stream.done, 'handed_over');
    assert.equal(served.ads.finished?.status, 14);
    const next = await open();
    assert.equal(next.stream.upstreamState, 'dialing');
    redial.answer();
    assert.equal(next.stream.upstreamState, 'open');
    assert.equal(dials.length, 3, 'first, failed, redial: the next stream dialled nothing');
    assert.equal(redial.closes, 0);
  });

  it('/debug/xds: the socket, the upstream, each stream with its state and credential, and since when the kept config is served', async () => {
    const { xds, open, clock } = await keptThenLost([new Error('refused')]);
    clock.advance(5_000);
    const served = await open();
    const debug = xds.debug();
    assert.equal(debug.socket, '/nonexistent/XDS');
    assert.equal(debug.upstream, '198.18.0.1:15012');
    assert.equal(debug.servingLastKnownGoodSince, new Date(5_000).toISOString());
    assert.equal(xds.servingLastKnownGoodSince(), 5_000);
    assert.deepEqual(debug.streams, [
      {
        id: served.stream.id,
        mode: 'sotw',
        since: served.stream.since.toISOString(),
        upstream: 'last-known-good',
        credential: undefined,
        lastKnownGoodSince: new Date(5_000).toISOString(),
      },
    ]);
    assert.deepEqual(Object.keys(debug.kept as object), ['sotw', 'delta']);
    served.ads.reset();
    await served.stream.done;
    await settle();
    assert.equal(xds.debug().servingLastKnownGoodSince, undefined);
  });

  it('keepLastKnownGood false: an ACKed response is not kept', async () => {
    const upstream = new FakeUpstream();
    const xds = new XdsRelay({
      socketPath: '/nonexistent/XDS',
      upstream: { address: { host: '198.18.0.1', port: 15012 } } as UpstreamOptions,
      registry: new Registry(),
      clock: new FakeClock(),
      logger: silentLogger,
      keepLastKnownGood: false,
      dialUpstream: () => Promise.resolve(upstream),
    });
    const ads = new FakeAdsStream();
    xds.serve('sotw', ads);
    await settle();
    upstream.answer();
    ads.request(subscribe('sidecar~a'));
    upstream.respond(response('v1', 'n1'));
    ads.request(ack('v1', 'n1'));
    assert.equal(xds.lastKnownGood.has('sotw'), false);
  });

  it('tells unimplemented listeners the flavour the server has not: Delta, then SotW', async () => {
    const [delta, sotw] = [new FakeUpstream(), new FakeUpstream()];
    const { xds, open } = relay([delta, sotw]);
    const told: string[] = [];
    xds.onUnimplemented((mode) => told.push(mode));
    xds.onUnimplemented(() => assert.fail('unsubscribed'))();
    const first = await open('delta');
    delta.answer({ ':status': 200, 'grpc-status': '12' });
    delta.closeCall();
    assert.equal(await first.stream.done, 'delta_unsupported');
    const second = await open('sotw');
    sotw.answer({ ':status': 200, 'grpc-status': '12' });
    sotw.closeCall();
    assert.equal(await second.stream.done, 'upstream_error');
    assert.deepEqual(told, ['delta', 'sotw']);
  });

  it('stop() ends every stream (relay_stopped) and closes their upstream calls', async () => {
    const [one, two] = [new FakeUpstream(), new FakeUpstream()];
    const { xds, open } = relay([one, two]);
    const streams = [await open(), await open('delta')];
    await xds.stop();
    assert.deepEqual(await Promise.all(streams.map(({ stream }) => stream.done)), ['relay_stopped', 'relay_stopped']);
    assert.deepEqual([one.closes, two.closes], [1, 1]);
  });
});

describe('XdsRelay: predial', () => {
  const dirs: string[] = [];
  after(() => Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true }))));

  async function listening(script: (FakeUpstream | Promise<FakeUpstream>)[]) {
    const dir = await mkdtemp(join(tmpdir(), 'relay-predial-'));
    dirs.push(dir);
    const kit = relay();
    const xds = new XdsRelay({
      socketPath: join(dir, 'XDS'),
      upstream: { address: { host: '198.18.0.1', port: 15012 } } as UpstreamOptions,
      registry: new Registry(),
      clock: kit.clock,
      logger: silentLogger,
      dialUpstream: (mode) => (kit.dials.push(mode), Promise.resolve(script.shift() as UpstreamStream)),
    });
    await xds.start();
    return { ...kit, xds };
  }

  it("Envoy's first stream takes the predial's connection: one dial in all", async () => {
    const predialed = new FakeUpstream();
    const { xds, dials } = await listening([predialed]);
    try {
      xds.predial('sotw');
      xds.predial('sotw');
      const ads = new FakeAdsStream();
      const stream = xds.serve('sotw', ads);
      await settle();
      predialed.answer();
      assert.equal(stream.upstreamState, 'open');
      assert.deepEqual(dials, ['sotw']);
    } finally {
      await xds.stop();
    }
  });

  it('no predial before the relay listens, nor once a stream is open', async () => {
    const idle = relay();
    idle.xds.predial('sotw');
    assert.deepEqual(idle.dials, [], 'not listening');
    const { xds, dials } = await listening([new FakeUpstream()]);
    try {
      xds.serve('sotw', new FakeAdsStream());
      xds.predial('sotw');
      await settle();
      assert.deepEqual(dials, ['sotw'], "the stream's own dial only");
    } finally {
      await xds.stop();
    }
  });

  it('stop() closes a predial no stream took', async () => {
    const predialed = new FakeUpstream();
    const { xds } = await listening([predialed]);
    xds.predial('delta');
    await settle();
    await xds.stop();
    assert.equal(predialed.closes, 1);
  });

  it('stop() closes a predial still under way once it connects', async () => {
    const predialed = new FakeUpstream();
    let connect!: (upstream: FakeUpstream) => void;
    const { xds } = await listening([new Promise<FakeUpstream>((resolve) => (connect = resolve))]);
    xds.predial('sotw');
    await xds.stop();
    connect(predialed);
    await settle();
    assert.equal(predialed.closes, 1);
  });

  it('a failed predial is forgotten: the stream dials its own', async () => {
    const own = new FakeUpstream();
    const refused = Promise.reject(new Error('refused'));
    refused.catch(() => undefined);
    const { xds, dials } = await listening([refused, own]);
    try {
      xds.predial('sotw');
      const ads = new FakeAdsStream();
      const stream = xds.serve('sotw', ads);
      await settle();
      own.answer();
      assert.equal(stream.upstreamState, 'open');
      assert.deepEqual(dials, ['sotw', 'sotw']);
    } finally {
      await xds.stop();
    }
  });

  it("a stream of the other mode does not take the predial's connection", async () => {
    const [predialed, own] = [new FakeUpstream(), new FakeUpstream()];
    const { xds, dials } = await listening([new Promise<FakeUpstream>(() => undefined), own]);
    try {
      xds.predial('sotw');
      const stream = xds.serve('delta', new FakeAdsStream());
      await settle();
      own.answer();
      assert.equal(stream.upstreamState, 'open');
      assert.deepEqual(dials, ['sotw', 'delta']);
      assert.equal(predialed.closes, 0);
    } finally {
      await xds.stop();
    }
  });
});

describe('XdsRelay: endStreams, as the agent stops its Envoys', () => {
  it('ends every stream oldest first, so the newest upstream connection closes last; nothing is dialled after', async () => {
    const upstreams = [new FakeUpstream(), new FakeUpstream(), new FakeUpstream()];
    const { xds, open, dials } = relay([...upstreams]);
    const streams = [await open(), await open(), await open('delta')];
    const closed: number[] = [];
    upstreams.forEach((upstream, index) => {
      const close = upstream.close.bind(upstream);
      upstream.close = () => (closed.push(index), close());
    });
    xds.endStreams();
    assert.deepEqual(closed, [0, 1, 2]);
    assert.deepEqual(await Promise.all(streams.map(({ stream }) => stream.done)), ['relay_stopped', 'relay_stopped', 'relay_stopped']);
    xds.predial('sotw');
    await xds.stop();
    assert.equal(dials.length, 3, 'nothing dialled after endStreams');
  });
});
