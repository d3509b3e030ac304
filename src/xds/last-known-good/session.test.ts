import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import pino from 'pino';
import { Registry } from '../../metrics/index.ts';
import { FakeClock } from '../../shared/clock.ts';
import { silentLogger } from '../../shared/log.ts';
import { LastKnownGoodConfig } from './config.ts';
import { LastKnownGoodSession } from './session.ts';
import { XdsStats } from '../relay/stats.ts';
import type { UpstreamStream } from '../upstream/session.ts';
import { readResponse, type RequestFields } from '../../discovery/wire.ts';
import { lenField } from '../../grpc/proto-wire.ts';

const settle = () => new Promise((resolve) => setImmediate(resolve));
const backoff = { initialMs: 1000, multiplier: 1.6, jitter: 0.4, maxMs: 2500 };

/** A session whose dials fail until `upAt` (ms on the fake clock); `random` scripts the jitter. */
function rig(upAt: number, random: () => number = () => 0.5) {
  const clock = new FakeClock(0);
  const dials: number[] = [];
  const events: string[] = [];
  const handedOver: UpstreamStream[] = [];
  const registry = new Registry();
  const session = new LastKnownGoodSession({
    id: 1, mode: 'sotw', lastKnownGood: new LastKnownGoodConfig(), clock, logger: silentLogger, stats: new XdsStats(registry, clock),
    send: () => undefined,
    dial: async () => {
      dials.push(clock.now());
      if (clock.now() < upAt) throw new Error('ECONNREFUSED');
      return { stream: {}, close: () => events.push('probe closed') } as unknown as UpstreamStream;
    },
    handover: (upstream) => (handedOver.push(upstream), events.push('handover')),
    reachable: (ok) => events.push(ok ? 'reachable' : 'unreachable'),
    backoff,
    random,
  });
  return { clock, dials, events, handedOver, session, registry };
}

/** Moves the fake clock in steps; fails instead of spinning if the session keeps re-arming. */
async function advance(clock: FakeClock, ms: number, step = 100): Promise<void> {
  for (let at = 0; at < ms; at += step) {
    clock.advance(step);
    await settle();
  }
}

describe('LastKnownGoodSession: redials with jittered backoff and hands over', () => {
  it('dials at the policy\'s delays up to the cap, until the server answers; then hands that same call over, unclosed', async () => {
    const { clock, dials, events, handedOver, session, registry } = rig(8000);
    session.start('refused');
    assert.match(await registry.getSingleMetricAsString('istio_agent_xds_last_known_good_streams'), / 1$/m);
    await advance(clock, 12_000);
    // 1000, +1600, +2500, +2500, +2500 (the random source at its middle: no jitter)
    assert.deepEqual(dials, [1000, 2600, 5100, 7600, 10_100]);
    assert.deepEqual(events.slice(-2), ['reachable', 'handover']);
    assert.equal(events.includes('probe closed'), false, 'the dial that reached the server carries the next stream');
    assert.equal(handedOver.length, 1);
    assert.equal(events.filter((event) => event === 'unreachable').length, 4);
  });

  it('the jitter moves each redial: a session whose random source says 0 redials at 0.6× the base', async () => {
    const { clock, dials, session } = rig(Infinity, () => 0);
    session.start('refused');
    await advance(clock, 4000, 10);
    session.stop();
    assert.deepEqual(dials, [600, 1560, 3060]);
  });

  it('sessions that lose the server together spread their redials', async () => {
    let seed = 11;
    const random = () => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31);
    const rigs = Array.from({ length: 20 }, () => rig(Infinity, random));
    for (const { session } of rigs) session.start('refused');
    for (let at = 0; at < 3000; at += 10) {
      for (const { clock } of rigs) clock.advance(10);
      await settle();
    }
    for (const { session } of rigs) session.stop();
    const firsts = rigs.map(({ dials }) => dials[0]!);
    const perWindow = new Map<number, number>();
    for (const at of firsts) perWindow.set(Math.floor(at / 100), (perWindow.get(Math.floor(at / 100)) ?? 0) + 1);
    assert.ok(Math.max(...perWindow.values()) <= 20 / 3, `first redials per 100 ms: ${[...perWindow.values()]}`);
  });

  it('stops dialling once the stream ended', async () => {
    const { clock, dials, events, session, registry } = rig(Infinity);
    session.start('refused');
    await advance(clock, 1100);
    session.stop();
    await advance(clock, 10_000);
    assert.deepEqual(dials, [1000]);
    assert.equal(events.includes('handover'), false);
    assert.match(await registry.getSingleMetricAsString('istio_agent_xds_last_known_good_streams'), / 0$/m);
  });
});

describe('LastKnownGoodSession: what it answers Envoy, logged and counted', () => {
  const cds = 'type.googleapis.com/envoy.config.cluster.v3.Cluster';
  const eds = 'type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment';
  const ask = (typeUrl: string, fields: Partial<RequestFields> = {}): RequestFields => ({
    typeUrl,
    versionInfo: '',
    nonce: '',
    error: undefined,
    names: [],
    node: undefined,
    unsubscribe: [],
    initialVersions: 0,
    ...fields,
  });

  it('sends the kept response once, counts it, and tells an ACK, a NACK and a missing type apart', async () => {
    const lines: { level: number; msg: string; type?: string; version?: string; resources?: number; error?: string; stream?: number }[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    const lastKnownGood = new LastKnownGoodConfig();
    lastKnownGood.keepSotw(cds, 'v1', [Buffer.concat([lenField(1, 'v1'), lenField(2, 'a'), lenField(4, cds), lenField(5, 'server')])], 0);
    const clock = new FakeClock(5_000);
    const registry = new Registry();
    const sent: Buffer[] = [];
    const session = new LastKnownGoodSession({
      id: 7,
      mode: 'sotw',
      lastKnownGood,
      clock,
      logger,
      stats: new XdsStats(registry, clock),
      send: (message) => void sent.push(message),
      dial: () => new Promise(() => undefined),
      handover: () => undefined,
      reachable: () => undefined,
      backoff,
    });
    session.start('refused');
    session.request(ask(cds));
    const nonce = readResponse(sent[0]!, 'sotw').nonce;
    assert.equal(nonce, 'lkg-7-5000-1', 'the nonce names the stream and when it started');
    session.request(ask(cds, { nonce }));
    session.request(ask(cds, { nonce, error: 'bad cluster' }));
    session.request(ask(eds));
    session.stop();
    session.stop();
    assert.equal(sent.length, 1);
    assert.deepEqual(lines.map((line) => [line.level, line.msg]), [
      [40, 'serving last-known-good config: the discovery server cannot be reached'],
      [30, 'sent a last-known-good response'],
      [40, 'Envoy rejected a last-known-good response (NACK)'],
      [40, 'nothing kept for a type Envoy asks for; it waits for the discovery server'],
    ]);
    assert.deepEqual(
      lines.slice(1).map(({ stream, type, version }) => ({ stream, type, version })),
      [
        { stream: 7, type: cds, version: 'v1' },
        { stream: 7, type: cds, version: 'v1' },
        { stream: 7, type: eds, version: undefined },
      ],
    );
    assert.equal(lines[1]!.resources, 1);
    assert.equal(lines[2]!.error, 'bad cluster');
    const metrics = await registry.metrics();
    assert.match(metrics, new RegExp(`^istio_agent_xds_last_known_good_responses_total\\{type="envoy.config.cluster.v3.Cluster"\\} 1$`, 'm'));
    assert.match(metrics, new RegExp(`^istio_agent_xds_last_known_good_nacks_total\\{type="envoy.config.cluster.v3.Cluster"\\} 1$`, 'm'));
    assert.match(metrics, /^istio_agent_xds_last_known_good_streams 0$/m, 'a second stop is not counted twice');
    assert.equal(session.since, 5_000);
    const start = lines[0] as unknown as { stream: number; mode: string; since: string; reason: string };
    assert.deepEqual(
      { stream: start.stream, mode: start.mode, since: start.since, reason: start.reason },
      { stream: 7, mode: 'sotw', since: new Date(5_000).toISOString(), reason: 'refused' },
    );
  });

  it('a dial that answers after the stream ended is closed, not handed over', async () => {
    let answer: (upstream: UpstreamStream) => void = () => undefined;
    const events: string[] = [];
    const clock = new FakeClock(0);
    const session = new LastKnownGoodSession({
      id: 1, mode: 'sotw', lastKnownGood: new LastKnownGoodConfig(), clock, logger: silentLogger, stats: new XdsStats(new Registry(), clock),
      send: () => undefined,
      dial: () => new Promise((resolve) => (answer = resolve)),
      handover: () => events.push('handover'),
      reachable: (ok) => events.push(ok ? 'reachable' : 'unreachable'),
      backoff,
    });
    session.start('refused');
    await advance(clock, 2000);
    session.stop();
    answer({ close: () => events.push('closed') } as unknown as UpstreamStream);
    await settle();
    assert.deepEqual(events, ['reachable', 'closed']);
  });
});

describe('LastKnownGoodSession: the handover line', () => {
  it('says how long the stream was served from the last-known-good config', async () => {
    const lines: { msg: string; servedForMs?: number; stream?: number }[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    const clock = new FakeClock(50_000);
    const session = new LastKnownGoodSession({
      id: 3,
      mode: 'sotw',
      lastKnownGood: new LastKnownGoodConfig(),
      clock,
      logger,
      stats: new XdsStats(new Registry(), clock),
      send: () => undefined,
      dial: async () => ({ close: () => undefined }) as unknown as UpstreamStream,
      handover: () => undefined,
      reachable: () => undefined,
      backoff,
      random: () => 0.5,
    });
    session.start('refused');
    await advance(clock, 1000);
    const handover = lines.find((line) => line.msg === 'the discovery server answers again; handing the stream over');
    assert.deepEqual({ stream: handover?.stream, servedForMs: handover?.servedForMs }, { stream: 3, servedForMs: 1000 });
  });
});

describe('LastKnownGoodSession with a clock that ignores the abort signal', () => {
  it('stops dialling all the same once the stream ended', async () => {
    let wake: () => void = () => undefined;
    const clock = Object.assign(new FakeClock(0), { sleep: () => new Promise<void>((resolve) => (wake = resolve)) });
    let dials = 0;
    const session = new LastKnownGoodSession({
      id: 1,
      mode: 'sotw',
      lastKnownGood: new LastKnownGoodConfig(),
      clock,
      logger: silentLogger,
      stats: new XdsStats(new Registry(), clock),
      send: () => undefined,
      dial: async () => (dials++, { close: () => undefined } as unknown as UpstreamStream),
      handover: () => undefined,
      reachable: () => undefined,
      backoff,
    });
    session.start('refused');
    await settle();
    session.stop();
    wake();
    await settle();
    assert.equal(dials, 0);
  });
});
