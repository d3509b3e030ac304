import assert from 'node:assert/strict';
import { test } from '../../test/support/sync-deadline.ts';
import { durationRangeError, formatDuration, maxTimerMs, parseDuration, toWholeSeconds, type DurationRange } from './duration.ts';

test('parseDuration reads Go durations', () => {
  const cases: [string, number | undefined][] = [
    ['45s', 45_000],
    ['1m0s', 60_000],
    ['1h2m3s', 3_723_000],
    ['500ms', 500],
    ['1.5s', 1500],
    ['.5s', 500],
    ['250us', 0.25],
    ['0', 0],
    ['-1s', -1000],
    ['', undefined],
    ['45', undefined],
    ['s', undefined],
    ['1x', undefined],
    ['1s junk', undefined],
    ['1d', undefined],
    ['1sx2s', undefined],
    ['5x10s', undefined],
    ['1s 2s', undefined],
    ['x1s', undefined],
    ['1s2', undefined],
    ['1.5.5s', undefined],
    ['--1s', undefined],
    ['+1s', 1000],
    ['-', undefined],
    ['1h1h', 7_200_000],
    ['1ns', 1e-6],
    ['1µs', 1e-3],
    ['2m', 120_000],
    ['1.25s', 1250],
    ['.25s', 250],
    ['1s+2s', undefined],
    ['1s-2s', undefined],
  ];
  for (const [text, expected] of cases) assert.equal(parseDuration(text), expected, text);
});

test('durationRangeError bounds durations by what a Node timer holds and by a floor', () => {
  const cases: [number, DurationRange, string | undefined][] = [
    [maxTimerMs, {}, undefined],
    [maxTimerMs + 1, {}, 'must be at most 596h31m23.647s (2^31-1 ms, the longest timer)'],
    [-1, {}, 'must not be negative'],
    [0, { minMs: 1000, zeroMeansOff: true }, undefined],
    [1e-6, { minMs: 1000, zeroMeansOff: true }, 'must be at least 1s (or 0s: off)'],
    [0, { minMs: 10 }, 'must be at least 10ms'],
    [10, { minMs: 10 }, undefined],
  ];
  for (const [ms, range, expected] of cases) assert.equal(durationRangeError(ms, range), expected, `${ms} ${JSON.stringify(range)}`);
});

test('formatDuration writes Go-style durations', () => {
  assert.equal(formatDuration(10), '10ms');
  assert.equal(formatDuration(1000), '1s');
  assert.equal(formatDuration(90_000), '1m30s');
  assert.equal(formatDuration(3_600_000), '1h0m0s');
});

test("toWholeSeconds: milliseconds rounded to the nearest second (Envoy's drain flags), never below 0", () => {
  const cases: [number, number][] = [[0, 0], [499, 0], [500, 1], [1499, 1], [1500, 2], [45_000, 45], [-1500, 0]];
  for (const [ms, want] of cases) assert.equal(toWholeSeconds(ms), want, String(ms));
});
