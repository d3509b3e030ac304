import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseDuration } from './duration.ts';

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
  ];
  for (const [text, expected] of cases) assert.equal(parseDuration(text), expected, text);
});
