import assert from 'node:assert/strict';
import { test } from 'node:test';
import { acceptsGzip, preferences } from './negotiate.ts';

const gzipCases: [string | undefined, boolean][] = [
  [undefined, false],
  ['', false],
  ['identity', false],
  ['gzip', true],
  ['deflate, gzip;q=0.5', true],
  ['gzip;q=0', false],
  ['*', true],
  ['*, gzip;q=0', false],
  ['br, GZIP', true],
];
for (const [header, want] of gzipCases) test(`acceptsGzip(${JSON.stringify(header)}) is ${want}`, () => assert.equal(acceptsGzip(header), want));

const preferenceCases: [string, string | undefined, { value: string; q: number }[]][] = [
  ['none', undefined, []],
  [
    'best first, ties in their order',
    'a;q=0.5, b, c;q=0.5, d;q=1',
    [
      { value: 'b', q: 1 },
      { value: 'd', q: 1 },
      { value: 'a', q: 0.5 },
      { value: 'c', q: 0.5 },
    ],
  ],
  [
    'q above 1 is 1, q=0 and unreadable q drop the entry',
    'a;q=7, b;q=0, c;q=1.2.3, d;q=0.001',
    [
      { value: 'a', q: 1 },
      { value: 'd', q: 0.001 },
    ],
  ],
  [
    'q after other parameters, any case; a q without digits is no q',
    'A/B ; level=1 ; Q=0.3, c;q=, d;q=x',
    [
      { value: 'c', q: 1 },
      { value: 'd', q: 1 },
      { value: 'a/b', q: 0.3 },
    ],
  ],
  ['empty entries go', ', ,a,', [{ value: 'a', q: 1 }]],
  [
    'only a whole q=<number> parameter is a q',
    'a;xq=0, b;q=0.5x, c;q=0.4',
    [
      { value: 'a', q: 1 },
      { value: 'b', q: 1 },
      { value: 'c', q: 0.4 },
    ],
  ],
  [
    'at most 64 entries are read',
    `${Array.from({ length: 64 }, (_, at) => `t${at};q=0.5`).join(',')},late`,
    Array.from({ length: 64 }, (_, at) => ({ value: `t${at}`, q: 0.5 })),
  ],
];
for (const [name, header, want] of preferenceCases) test(`preferences: ${name}`, () => assert.deepEqual(preferences(header), want));

for (const [header, want] of [['x-gzip', false], [' gzip ;q=0.1', true], ['*;q=0', false], ['gzip;q=0, *', false]] as const) {
  test(`acceptsGzip(${JSON.stringify(header)}) is ${want}`, () => assert.equal(acceptsGzip(header), want));
}
