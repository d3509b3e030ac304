import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Registry } from '../metrics/index.ts';
import { FakeClock } from '../shared/clock.ts';
import { silentLogger } from '../shared/log.ts';
import { KeptConfig } from './kept-config.ts';
import { KeptSession } from './kept-session.ts';
import { XdsStats } from './stats.ts';
import type { UpstreamStream } from './upstream.ts';

const settle = () => new Promise((resolve) => setImmediate(resolve));

/** A session whose dials fail until `upAt` (ms on the fake clock). */
function rig(upAt: number) {
  const clock = new FakeClock(0);
  const dials: number[] = [];
  const events: string[] = [];
  const registry = new Registry();
  const session = new KeptSession({
    id: 1, mode: 'sotw', kept: new KeptConfig(), clock, logger: silentLogger, stats: new XdsStats(registry, clock),
    send: () => undefined,
    dial: async () => {
      dials.push(clock.now());
      if (clock.now() < upAt) throw new Error('ECONNREFUSED');
      return { stream: {}, close: () => events.push('probe closed') } as unknown as UpstreamStream;
    },
    handover: () => events.push('handover'),
    reachable: (ok) => events.push(ok ? 'reachable' : 'unreachable'),
    backoff: { initialMs: 500, maxMs: 2000 },
  });
  return { clock, dials, events, session, registry };
}

async function advance(clock: FakeClock, ms: number, step = 100): Promise<void> {
  for (let at = 0; at < ms; at += step) {
    clock.advance(step);
    await settle();
  }
}

describe('KeptSession: redials with backoff and hands over', () => {
  it('dials after 0.5 s, doubling to the cap, until the server answers; then closes the probe and hands over', async () => {
    const { clock, dials, events, session, registry } = rig(6000);
    session.start('refused');
    assert.match(await registry.getSingleMetricAsString('istio_agent_xds_last_known_good_streams'), / 1$/m);
    await advance(clock, 10_000);
    assert.deepEqual(dials, [500, 1500, 3500, 5500, 7500]);
    assert.deepEqual(events.slice(-3), ['reachable', 'probe closed', 'handover']);
    assert.equal(events.filter((event) => event === 'unreachable').length, 4);
  });

  it('stops dialling once the stream ended', async () => {
    const { clock, dials, events, session, registry } = rig(Infinity);
    session.start('refused');
    await advance(clock, 600);
    session.stop();
    await advance(clock, 10_000);
    assert.deepEqual(dials, [500]);
    assert.equal(events.includes('handover'), false);
    assert.match(await registry.getSingleMetricAsString('istio_agent_xds_last_known_good_streams'), / 0$/m);
  });
});
