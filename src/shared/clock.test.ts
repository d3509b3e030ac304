import assert from 'node:assert/strict';
import { test } from 'node:test';
import { boundedInterval, boundedTimer, maxTimerChunkMs, type TimerHost } from './clock.ts';

/** Host timers that run only when the test moves time; records every delay asked for. */
class FakeHost implements TimerHost {
  now = 0;
  asked: number[] = [];
  #timers = new Map<number, { at: number; callback: () => void }>();
  #next = 1;

  setTimeout(callback: () => void, ms: number): unknown {
    this.asked.push(ms);
    // As Node does: a delay it cannot arm runs after 1 ms (the bug being guarded against).
    const delay = ms > maxTimerChunkMs ? 1 : ms;
    const id = this.#next++;
    this.#timers.set(id, { at: this.now + delay, callback });
    return id;
  }

  clearTimeout(handle: unknown): void {
    this.#timers.delete(handle as number);
  }

  monotonicNow(): number {
    return this.now;
  }

  advance(ms: number): void {
    const target = this.now + ms;
    // A timer that re-arms at 1 ms would spin here for ever: fail instead.
    for (let runs = 0; ; runs++) {
      if (runs > 10_000) throw new Error('timers spin: over 10,000 ran in one advance');
      const due = [...this.#timers].filter(([, timer]) => timer.at <= target).sort((a, b) => a[1].at - b[1].at)[0];
      if (!due) break;
      this.#timers.delete(due[0]);
      this.now = due[1].at;
      due[1].callback();
    }
    this.now = target;
  }
}

const year = 365 * 24 * 3600_000;

test('a wait past 2^31-1 ms is armed in chunks Node can hold and fires once, at its end', () => {
  const cases = [maxTimerChunkMs, maxTimerChunkMs + 1, year, 3 * maxTimerChunkMs + 5];
  for (const delay of cases) {
    const host = new FakeHost();
    let fired = 0;
    boundedTimer(() => fired++, delay, { host });
    host.advance(delay - 1);
    assert.equal(fired, 0, `${delay}: not before its end`);
    assert.ok(host.asked.every((ms) => ms <= maxTimerChunkMs), `${delay}: every chunk fits (${host.asked.join(', ')})`);
    assert.ok(host.asked.length <= Math.ceil(delay / maxTimerChunkMs) + 1, `${delay}: no spinning (${host.asked.length} arms)`);
    host.advance(1);
    assert.equal(fired, 1, `${delay}: fired at its end`);
    host.advance(year);
    assert.equal(fired, 1, `${delay}: once`);
  }
});

test('NaN and negative delays run at once; Infinity never fires and never spins', () => {
  for (const delay of [Number.NaN, -5]) {
    const host = new FakeHost();
    let fired = 0;
    boundedTimer(() => fired++, delay, { host });
    host.advance(0);
    assert.equal(fired, 1, String(delay));
  }
  const host = new FakeHost();
  let fired = 0;
  boundedTimer(() => fired++, Number.POSITIVE_INFINITY, { host });
  host.advance(10 * year);
  assert.equal(fired, 0);
  assert.ok(host.asked.length <= Math.ceil((10 * year) / maxTimerChunkMs) + 1, `one arm per 24.8 days (${host.asked.length})`);
});

test('a cancelled long wait never fires, also between chunks', () => {
  const host = new FakeHost();
  let fired = 0;
  const timer = boundedTimer(() => fired++, year, { host });
  host.advance(maxTimerChunkMs + 10);
  timer.cancel();
  host.advance(year);
  assert.equal(fired, 0);
});

test('an interval longer than 2^31-1 ms fires once per period, and stops when cancelled', () => {
  const host = new FakeHost();
  let fired = 0;
  const interval = boundedInterval(() => fired++, year, { host });
  host.advance(year - 1);
  assert.equal(fired, 0);
  host.advance(1);
  assert.equal(fired, 1);
  host.advance(year);
  assert.equal(fired, 2);
  interval.cancel();
  host.advance(3 * year);
  assert.equal(fired, 2);
});
