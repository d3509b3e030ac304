import assert from 'node:assert/strict';
import { readSdsResponse } from './sds-client.ts';
import { test } from './sync-deadline.ts';

test('the test SDS client refuses a truncated varint instead of reading past the end forever', () => {
  assert.throws(() => readSdsResponse(Buffer.from([0x08, 0x80])), /^Error: SDS response: malformed varint at byte 2 of 2$/);
  assert.throws(() => readSdsResponse(Buffer.from([0x80])), /malformed varint at byte 1 of 1/);
  assert.deepEqual(readSdsResponse(Buffer.alloc(0)).secrets, []);
});
