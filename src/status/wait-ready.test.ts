import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FakeClock } from '../shared/clock.ts';
import { waitReady } from './wait-ready.ts';

const flush = () => new Promise((resolve) => setImmediate(resolve));

/** Runs `waitReady` on a FakeClock, moving time 100 ms at a time until it settles. */
async function drive(answers: (string | undefined)[], options: { periodMs: number; timeoutMs: number }) {
  const clock = new FakeClock();
  const probes: number[] = [];
  const check = async () => (probes.push(clock.now()), answers.length > 1 ? answers.shift() : answers[0]);
  let settled: Awaited<ReturnType<typeof waitReady>> | undefined;
  void waitReady({ check, clock, ...options }).then((result) => (settled = result));
  for (let steps = 0; settled === undefined && steps < 10_000; steps++) {
    await flush();
    clock.advance(100);
  }
  return { result: settled, probes };
}

describe('waitReady', () => {
  it('returns ready as soon as a probe passes', async () => {
    const { result, probes } = await drive(['HTTP 503', 'HTTP 503', undefined], { periodMs: 500, timeoutMs: 60_000 });
    assert.deepEqual(result, { ready: true });
    assert.deepEqual(probes, [0, 500, 1000]);
  });

  it('gives up at the deadline with the last reason, after a probe at the deadline', async () => {
    const { result, probes } = await drive(['ECONNREFUSED', 'HTTP 503: not ready'], { periodMs: 400, timeoutMs: 1000 });
    assert.deepEqual(result, { ready: false, last: 'HTTP 503: not ready' });
    assert.deepEqual(probes, [0, 400, 800, 1000]);
  });
});
