import assert from 'node:assert/strict';
import { test } from 'node:test';
import { duplicateKeys } from './duplicate-keys.ts';

test('duplicateKeys finds a key repeated in the same object, at any depth, and nothing else', () => {
  const cases: [string, string[]][] = [
    ['{"pid":1,"msg":"envoy started","pid":2}', ['pid']],
    ['{"a":{"stream":1,"stream":2},"stream":3}', ['stream']],
    ['{"a":[{"k":1},{"k":2}],"b":{"k":1}}', []],
    ['{"msg":"a \\"quoted\\" {brace}, \\"msg\\":","x":["msg","msg"]}', []],
    ['{"args":["-c","x"],"level":30}', []],
  ];
  for (const [json, expected] of cases) assert.deepEqual(duplicateKeys(json), expected, json);
});
