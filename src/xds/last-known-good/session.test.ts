import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Registry } from '../../metrics/index.ts';
import { FakeClock } from '../../shared/clock.ts';
import { silentLogger } from '../../shared/log.ts';
import { LastKnownGoodConfig } from './config.ts';
import { LastKnownGoodSession } from './session.ts';
import { XdsStats } from '../relay/stats.ts';
import type { UpstreamStream } from '../upstream/session.ts';

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
