import assert from 'node:assert/strict';
import { test } from 'node:test';
import { nativeGcAfterRotation, nativeGcIntervalMs } from './native-gc.ts';

test('a full GC after the first rotation, then at most once per interval however often rotations come', () => {
  let now = 5_000;
  let collected = 0;
  const afterRotation = nativeGcAfterRotation(() => now, () => collected++);
  afterRotation();
  assert.equal(collected, 1, 'the first rotation collects at once');
  now += nativeGcIntervalMs - 1;
  afterRotation();
  assert.equal(collected, 1, 'not again within the interval');
  now += 1;
  afterRotation();
  assert.equal(collected, 2, 'again once the interval has passed');
  now += 6_000;
  afterRotation();
  assert.equal(collected, 2, 'the interval counts from the last collection');
});

test('the real collector runs without --expose-gc on the command line', () => {
  const afterRotation = nativeGcAfterRotation(() => 0);
  afterRotation();
  assert.equal((globalThis as { gc?: unknown }).gc, undefined, 'gc stays out of the agent\'s own global');
});
