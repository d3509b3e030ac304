import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { gzipSync } from 'node:zlib';
import { unbox } from './unbox.ts';

const wasm = Buffer.from([0x00, 0x61, 0x73, 0x6d, 1, 0, 0, 0, 7]);

test('a gzip-wrapped module is unwrapped; bytes that are neither gzip, tar nor Wasm come back as they were', async () => {
  assert.deepEqual(await unbox(gzipSync(wasm), 1 << 20), wasm);
  assert.deepEqual(await unbox(gzipSync(gzipSync(wasm)), 1 << 20), wasm);
  const html = Buffer.from('<html>not found</html>');
  assert.equal(await unbox(html, 1 << 20), html);
});

test('a gzip bomb is refused past maxBytes, inflated off the event loop (which keeps turning meanwhile)', async () => {
  const bomb = gzipSync(Buffer.alloc(32 << 20));
  let settled = false;
  let turns = 0;
  const result = unbox(bomb, 1 << 20);
  result.then(() => (settled = true), () => (settled = true));
  while (!settled && turns < 1_000_000) {
    await nextTurn();
    turns++;
  }
  await assert.rejects(result, /inflates past 1048576 bytes/);
  assert.ok(turns > 0, 'the event loop turned while the module inflated');
});
