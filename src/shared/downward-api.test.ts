import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseDownwardApi, unquoteGo } from './downward-api.ts';

test('downward-API files: key="value" lines with Go quoting', () => {
  const text = 'app="reviews"\nversion="v1"\nsecurity.istio.io/tlsMode="istio"\nnote="a \\"quoted\\" \\\\ value\\n"\n\nno-equals-line\n';
  assert.deepEqual(parseDownwardApi(text), {
    ok: true,
    entries: { app: 'reviews', version: 'v1', 'security.istio.io/tlsMode': 'istio', note: 'a "quoted" \\ value\n' },
  });
  assert.deepEqual(parseDownwardApi('app="x"\nbad=unquoted\n'), { ok: false, line: 2, reason: 'value is not a double-quoted string' });
});

test('unquoteGo follows strconv.Unquote', () => {
  const cases: [string, string | undefined][] = [
    ['""', ''],
    ['"plain"', 'plain'],
    ['"tab\\tnl\\n"', 'tab\tnl\n'],
    ['"\\u00e9\\U0001F600"', 'é😀'],
    ['"\\xc3\\xa9"', 'é'],
    ['"\\303\\251"', 'é'],
    ['"é"', 'é'],
    ['"unterminated', undefined],
    ['"inner " quote"', undefined],
    ['"bad \\q escape"', undefined],
    ['"\\U00110000"', undefined],
    ["'single'", undefined],
  ];
  for (const [input, expected] of cases) assert.equal(unquoteGo(input), expected, input);
});
