import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseBoundedJson } from './bounded-json.ts';

const limits = { maxBytes: 64, maxDepth: 3 };

test('JSON within the byte and depth bounds parses; brackets inside strings and escaped quotes do not count', () => {
  const rows: [string, unknown][] = [
    ['{"a":[1,{"b":2}]}', { a: [1, { b: 2 }] }],
    ['[[["x"]]]', [[['x']]]],
    ['"[[[[[["', '[[[[[['],
    ['{"a":"\\"[[[["}', { a: '"[[[[' }],
    ['[[1],[2],[3],[4]]', [[1], [2], [3], [4]]],
    ['[[[]],[[]]]', [[[]], [[]]]],
    ['"' + 'a'.repeat(62) + '"', 'a'.repeat(62)],
  ];
  for (const [text, value] of rows) assert.deepEqual(parseBoundedJson(text, limits), { ok: true, value }, text);
});

test('too large, too deep or malformed JSON is refused with the reason', () => {
  assert.deepEqual(parseBoundedJson('"' + 'a'.repeat(63) + '"', limits), { ok: false, reason: 'is larger than 64 bytes' });
  assert.deepEqual(parseBoundedJson('"' + 'é'.repeat(32) + '"', limits), { ok: false, reason: 'is larger than 64 bytes' }, 'bytes, not characters');
  assert.deepEqual(parseBoundedJson('[[[[]]]]', limits), { ok: false, reason: 'nests deeper than 3 levels' });
  assert.deepEqual(parseBoundedJson('{"a":{"b":{"c":{}}}}', limits), { ok: false, reason: 'nests deeper than 3 levels' });
  assert.deepEqual(parseBoundedJson('[[]][[[[', limits), { ok: false, reason: 'nests deeper than 3 levels' });
  const bad = parseBoundedJson('{a', limits);
  assert.ok(!bad.ok && bad.reason.startsWith('is not valid JSON ('), JSON.stringify(bad));
});

test('the default limits are istiod-sized: 256 KiB and 64 levels', () => {
  assert.equal(parseBoundedJson('['.repeat(64) + ']'.repeat(64)).ok, true);
  assert.deepEqual(parseBoundedJson('['.repeat(65) + ']'.repeat(65)), { ok: false, reason: 'nests deeper than 64 levels' });
  assert.deepEqual(parseBoundedJson(`"${'a'.repeat(256 * 1024)}"`), { ok: false, reason: 'is larger than 262144 bytes' });
});
