import assert from 'node:assert/strict';
import { test } from 'node:test';
import { renewalDelayMs, retryDelayMs } from './renewal.ts';

const hour = 3_600_000;
const day = 24 * hour;

test('renewal is due half-way through the lifetime, moved by the jitter', () => {
  const cases = [
    { name: 'no jitter: half-way', random: 0.5, now: 0, want: 12 * hour },
    { name: 'jitter low end: grace 0.49 → later', random: 0, now: 0, want: 0.51 * day },
    { name: 'jitter high end: grace 0.51 → earlier', random: 1, now: 0, want: 0.49 * day },
    { name: 'measured from now', random: 0.5, now: 2 * hour, want: 10 * hour },
    { name: 'already past: after the floor, never at once', random: 0.5, now: 20 * hour, want: 1000 },
  ];
  for (const c of cases) {
    const got = renewalDelayMs({ issuedAt: 0, expiresAt: day, now: c.now, graceRatio: 0.5, jitterRatio: 0.01, random: c.random });
    assert.ok(Math.abs(got - c.want) < 1, `${c.name}: got ${got}, want ${c.want}`);
  }
});

test('the grace ratio is clamped to [0, 1]', () => {
  assert.equal(
    renewalDelayMs({ issuedAt: 0, expiresAt: day, now: 0, graceRatio: 1, jitterRatio: 0.5, random: 1 }),
    1000,
    'a ratio of 1 is the floor, not a loop',
  );
  assert.equal(renewalDelayMs({ issuedAt: 0, expiresAt: day, now: 0, graceRatio: 0, jitterRatio: 0.5, random: 0 }), day);
});

test('retries back off as gRPC\'s connection backoff: ×1.6 from 1 s, ±20 % jitter, at most 30 s', () => {
  const cases = [
    { attempt: 0, random: 0.5, want: 1000 },
    { attempt: 1, random: 0.5, want: 1600 },
    { attempt: 2, random: 0.5, want: 2560 },
    { attempt: 5, random: 0.5, want: 10_486 },
    { attempt: 8, random: 0.5, want: 30_000 },
    { attempt: 500, random: 0.5, want: 30_000 },
    { attempt: 0, random: 0, want: 800 },
    { attempt: 0, random: 0.999_999, want: 1200 },
    { attempt: 50, random: 0, want: 24_000 },
    { attempt: 50, random: 0.999_999, want: 36_000 },
  ];
  for (const c of cases) assert.equal(retryDelayMs(c.attempt, c.random), c.want, `attempt ${c.attempt}, random ${c.random}`);
});

test('a fleet failing together spreads its retries: no two agents with different draws retry at the same moment', () => {
  const draws = [0.05, 0.2, 0.35, 0.5, 0.65, 0.8, 0.95];
  for (const attempt of [0, 3, 10]) {
    const delays = draws.map((random) => retryDelayMs(attempt, random));
    assert.equal(new Set(delays).size, draws.length, `attempt ${attempt}: ${delays.join(', ')}`);
    const spread = Math.max(...delays) - Math.min(...delays);
    assert.ok(spread >= 0.3 * retryDelayMs(attempt, 0.5), `attempt ${attempt}: spread ${spread} ms`);
  }
});
