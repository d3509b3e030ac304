import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FakeClock } from './clock.ts';

test('FakeClock fires due timers in time order, each at its own instant, and skips cancelled ones', () => {
  const clock = new FakeClock(100);
  const fired: [string, number][] = [];
  clock.setTimeout(() => fired.push(['b', clock.now()]), 20);
  clock.setTimeout(() => fired.push(['a', clock.now()]), 10);
  clock.setTimeout(() => fired.push(['never', clock.now()]), 10).cancel();
  clock.setTimeout(() => fired.push(['later', clock.now()]), 31);
  clock.advance(30);
  assert.deepEqual(fired, [['a', 110], ['b', 120]]);
  assert.equal(clock.now(), 130);
  assert.equal(clock.pending, 1);
});

test('FakeClock sleeps end when time passes, or at once (rejecting) on abort', async () => {
  const clock = new FakeClock();
  const slept = clock.sleep(50);
  clock.advance(50);
  await slept;
  const controller = new AbortController();
  const aborted = clock.sleep(50, controller.signal);
  controller.abort(new Error('stop'));
  await assert.rejects(aborted, /stop/);
  assert.equal(clock.pending, 0);
});

test('a timer that re-arms itself with no delay fails advance() by name instead of spinning', () => {
  const clock = new FakeClock(0);
  let armed = 0;
  const rearm = () => void (armed++, clock.setTimeout(rearm, 0));
  clock.setTimeout(rearm, 5);
  assert.throws(() => clock.advance(10), /FakeClock\.advance\(10\): 1001 timers fired at 5 ms without time moving; a timer re-arms itself with no delay/);
  assert.equal(armed, 1000);
});

test('a timer that re-arms with a tiny delay over a long advance fails by name too', () => {
  const clock = new FakeClock(0, { maxTimersPerAdvance: 500 });
  const rearm = () => void clock.setTimeout(rearm, 1);
  clock.setTimeout(rearm, 1);
  assert.throws(() => clock.advance(3_600_000), /more than 500 timers fired in one advance, now at 501 ms/);
});

test('periodic timers within the bounds run as many times as time allows', () => {
  const clock = new FakeClock(0);
  let ticks = 0;
  const tick = () => void (ticks++, clock.setTimeout(tick, 10_000));
  clock.setTimeout(tick, 10_000);
  clock.advance(24 * 3_600_000);
  assert.equal(ticks, 8640);
  let zeroDelay = 0;
  for (let i = 0; i < 1000; i++) clock.setTimeout(() => zeroDelay++, 0);
  clock.advance(0);
  assert.equal(zeroDelay, 1000, 'a thousand timers at one instant are allowed');
});
