import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseDownwardApi, unquoteGo } from './downward-api.ts';

test('unquoteGo: every escape Go knows, raw bytes for \\x and octal, and what strconv.Unquote refuses', () => {
  const rows: [string, string | undefined][] = [
    ['"\\a\\b\\f\\n\\r\\t\\v\\\\\\"\\\'"', '\x07\b\f\n\r\t\v\\"\''],
    ['"a\\x41b"', 'aAb'],
    ['"\\101\\377"', `A${Buffer.from([0xff]).toString('utf8')}`],
    ['"\\400"', undefined],
    ['"\\ud7ff\\ue000"', '\ud7ff\ue000'],
    ['"\\ud800"', undefined],
    ['"\\udfff"', undefined],
    ['"\\U0010ffff"', '\u{10ffff}'],
    ['"', undefined],
    ['x"a"', undefined],
    ['"a"x', undefined],
    ['"a\nb"', undefined],
    ['"a\\"', undefined],
    ['"\\x4"', undefined],
  ];
  for (const [input, want] of rows) assert.equal(unquoteGo(input), want, JSON.stringify(input));
});

test('parseDownwardApi: the key is what comes before the first =, the line number of a bad value counts every line', () => {
  assert.deepEqual(parseDownwardApi('a="1=2"\n'), { ok: true, entries: { a: '1=2' } });
  assert.deepEqual(parseDownwardApi('=""\nk="v"'), { ok: true, entries: { '': '', k: 'v' } });
  assert.deepEqual(parseDownwardApi('\n\nskip\nk=v'), { ok: false, line: 4, reason: 'value is not a double-quoted string' });
  assert.deepEqual(parseDownwardApi('k="a"=b'), { ok: false, line: 1, reason: 'value is not a double-quoted string' });
});

test('parseDownwardApi: a 1 MiB value (the pod info cap) without escapes, or made only of escapes, is read whole, without deep recursion', () => {
  const plain = 'x'.repeat(1024 * 1024);
  assert.deepEqual(parseDownwardApi(`big="${plain}"\n`), { ok: true, entries: { big: plain } });
  const escaped = '\\n'.repeat(512 * 1024);
  const parsed = parseDownwardApi(`k="a${escaped}b"`);
  assert.ok(parsed.ok);
  assert.equal(parsed.entries.k, `a${'\n'.repeat(512 * 1024)}b`);
});

test('unquoteGo: a value with a closing quote but no opening one is refused, not read without its first character', () => {
  // A label written `app=web"` is malformed, as Go's strconv.Unquote says; it must not become the label app=eb.
  for (const input of ['web"', 'a"', "'a\""]) assert.equal(unquoteGo(input), undefined, JSON.stringify(input));
  assert.deepEqual(parseDownwardApi('app=web"\n'), { ok: false, line: 1, reason: 'value is not a double-quoted string' });
});
