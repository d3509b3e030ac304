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
  assert.equal(renewalDelayMs({ issuedAt: 0, expiresAt: day, now: 0, graceRatio: 1, jitterRatio: 0.5, random: 1 }), 1000, 'a ratio of 1 is the floor, not a loop');
  assert.equal(renewalDelayMs({ issuedAt: 0, expiresAt: day, now: 0, graceRatio: 0, jitterRatio: 0.5, random: 0 }), day);
});

test('retries back off from 1 s to at most 30 s', () => {
  assert.deepEqual([0, 1, 2, 3, 4, 5, 6, 50].map(retryDelayMs), [1000, 2000, 4000, 8000, 16_000, 30_000, 30_000, 30_000]);
});
