import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import { FakeClock } from '../shared/clock.ts';
import { waitOutDrain, type DrainPolicy } from './drain-wait.ts';

const flush = () => new Promise((resolve) => setImmediate(resolve));

/** Connection counts in turn (the last one stays); records the fake time of each ask. */
function scriptedConnections(clock: FakeClock, counts: (number | undefined)[]) {
  const asks: number[] = [];
  const activeConnections = async () => (asks.push(clock.now()), counts.length > 1 ? counts.shift() : counts[0]);
  return { asks, activeConnections };
}

function linesLogger() {
  const lines: Record<string, unknown>[] = [];
  return { lines, logger: pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) }) };
}

/** Waits on a fake clock moved 250 ms at a time (bounded); the fake time it took, when it asked, the log. */
async function wait(policy: Partial<DrainPolicy>, counts: (number | undefined)[] = [undefined]) {
  const clock = new FakeClock();
  const { lines, logger } = linesLogger();
  const connections = scriptedConnections(clock, counts);
  let done = false;
  const options = { clock, logger, signal: new AbortController().signal, policy: { durationMs: 3000, ...policy }, activeConnections: connections.activeConnections };
  const waited = waitOutDrain(options).finally(() => (done = true));
  for (let step = 0; !done; step++) {
    if (step > 400) throw new Error(`the wait has not ended after ${clock.now()} ms of fake time`);
    await flush();
    if (!done) clock.advance(250);
  }
  await waited;
  return { tookMs: clock.now(), asks: connections.asks, lines };
}

describe('waitOutDrain', () => {
  it('waits the whole duration, asking nothing', async () => {
    const { tookMs, asks } = await wait({ durationMs: 10_000 }, [0]);
    assert.deepEqual([tookMs, asks], [10_000, []]);
  });

  it('ends as soon as its signal is aborted mid-wait, with no fake time passing', async () => {
    const clock = new FakeClock();
    const stop = new AbortController();
    let done = false;
    const options = { clock, logger: pino({ level: 'silent' }), signal: stop.signal, policy: { durationMs: 10_000 }, activeConnections: async () => 1 };
    const waited = waitOutDrain(options).then(() => (done = true));
    await flush();
    assert.equal(done, false, 'waiting');
    stop.abort();
    await waited;
    assert.equal(clock.now(), 0);
  });

  it('exit-on-zero: waits the minimum, then stops once connections reach zero', async () => {
    const { tookMs, asks, lines } = await wait({ durationMs: 10_000, exitOnZeroActiveConnections: true, minDurationMs: 2000, pollMs: 1000 }, [2, 1, 0]);
    assert.deepEqual([tookMs, asks], [4000, [2000, 3000, 4000]]);
    assert.deepEqual(lines.at(-1), { ...lines.at(-1), msg: 'no active downstream connections; stopping', activeConnections: 0 });
  });

  it('exit-on-zero: no gauge at all stops at once after the minimum, saying the count is unknown', async () => {
    const { tookMs, lines } = await wait({ exitOnZeroActiveConnections: true, minDurationMs: 500 }, [undefined]);
    assert.equal(tookMs, 500);
    assert.equal(lines.find((line) => line.msg === 'no active downstream connections; stopping')?.activeConnections, 'unknown');
  });

  it('exit-on-zero: polls each second by default, logs the count it waits for, and says when the duration ran out', async () => {
    const { tookMs, asks, lines } = await wait({ exitOnZeroActiveConnections: true }, [4]);
    // The zero minimum's timer fires at the harness's first step (250 ms); the polls follow a second apart.
    assert.deepEqual([tookMs, asks], [3000, [250, 1250, 2250]]);
    assert.deepEqual(lines.filter((line) => line.msg === 'waiting for active downstream connections to close').map((line) => line.activeConnections), [4, 4, 4]);
    assert.equal(lines.at(-1)!.msg, 'drain duration over with connections still open; stopping');
    assert.equal(lines.at(-1)!.durationMs, 3000);
  });

  it('exit-on-zero: a minimum or a poll past the drain duration is cut to it', async () => {
    assert.equal((await wait({ exitOnZeroActiveConnections: true, minDurationMs: 60_000 }, [1])).tookMs, 3000);
    const { tookMs, asks } = await wait({ exitOnZeroActiveConnections: true, pollMs: 60_000 }, [1]);
    assert.deepEqual([tookMs, asks.length], [3000, 1]);
  });

  it('exit-on-zero: an abort in the minimum wait or between polls ends the wait there, with no further poll', async () => {
    for (const minDurationMs of [1000, 0]) {
      const clock = new FakeClock();
      const stop = new AbortController();
      let asks = 0;
      const policy = { durationMs: 3000, exitOnZeroActiveConnections: true, minDurationMs };
      const waited = waitOutDrain({ clock, logger: pino({ level: 'silent' }), signal: stop.signal, policy, activeConnections: async () => (asks++, 2) });
      for (let i = 0; i < 5; i++) await flush();
      // Fires a zero minimum's timer only: the wait then polls once and waits for the next poll.
      clock.advance(0);
      for (let i = 0; i < 5; i++) await flush();
      stop.abort();
      await waited;
      assert.equal(asks, minDurationMs > 0 ? 0 : 1, `minimum ${minDurationMs}`);
      assert.equal(clock.now(), 0);
    }
  });
});
