import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Backoff, type BackoffPolicy } from './backoff.ts';

const policy: BackoffPolicy = { initialMs: 1000, multiplier: 1.6, jitter: 0.4, maxMs: 2500 };
const take = (backoff: Backoff, count: number) => Array.from({ length: count }, () => backoff.next());

test('the base grows by the multiplier up to the cap; the middle of the random range is the base', () => {
  assert.deepEqual(take(new Backoff(policy, () => 0.5), 5), [1000, 1600, 2500, 2500, 2500]);
});

test('jitter moves each delay by up to ± the fraction, in both directions', () => {
  assert.deepEqual(take(new Backoff(policy, () => 0), 3), [600, 960, 1500]);
  assert.deepEqual(take(new Backoff(policy, () => 0.999_999), 3), [1400, 2240, 3500]);
});

test('reset starts again from the first delay', () => {
  const backoff = new Backoff(policy, () => 0.5);
  take(backoff, 4);
  backoff.reset();
  assert.equal(backoff.next(), 1000);
});

test('agents that fail together spread out: 20 random sources give 20 different first delays', () => {
  let seed = 7;
  const lcg = () => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31);
  const firsts = Array.from({ length: 20 }, () => new Backoff(policy, lcg).next());
  assert.equal(new Set(firsts).size, 20);
  assert.ok(Math.min(...firsts) >= 600 && Math.max(...firsts) <= 1400);
});
