import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { gzipSync } from 'node:zlib';
import { isWasm, unbox } from './unbox.ts';

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

/** A one-file ustar archive, its size field written as given (octal, NUL-terminated, as tar writes it). */
function tar(file: Buffer, sizeField = file.length.toString(8).padStart(11, '0')): Buffer {
  const header = Buffer.alloc(512);
  header.write('plugin.wasm', 0, 'latin1');
  header.write(`${sizeField}\0`, 124, 'latin1');
  header.write('ustar', 257, 'latin1');
  return Buffer.concat([header, file, Buffer.alloc(512 - (file.length % 512))]);
}

test('an image layer (tar, or gzip of tar) gives its first file; the wrappings nest at most four deep', async () => {
  assert.deepEqual(await unbox(tar(wasm), 1 << 20), wasm);
  assert.deepEqual(await unbox(gzipSync(tar(wasm)), 1 << 20), wasm);
  const four = gzipSync(tar(gzipSync(tar(wasm))));
  assert.deepEqual(await unbox(four, 1 << 20), wasm);
  const five = gzipSync(four);
  assert.notDeepEqual(await unbox(five, 1 << 20), wasm, 'a fifth wrapping is not opened');
});

test('hostile tar headers: a size past the archive, or not octal, gives the bytes back unread', async () => {
  for (const sizeField of ['77777777777', 'zzzz', '']) {
    const archive = tar(wasm, sizeField);
    assert.equal(await unbox(archive, 1 << 20), archive, JSON.stringify(sizeField));
  }
  const exact = Buffer.concat([tar(wasm).subarray(0, 512), wasm]);
  assert.deepEqual(await unbox(exact, 1 << 20), wasm, 'a file ending with the archive is read');
  const short = Buffer.concat([tar(wasm).subarray(0, 512), wasm.subarray(0, 8)]);
  assert.equal(await unbox(short, 1 << 20), short, 'one byte short is refused');
});

test('short inputs: a Wasm header alone is a module only from 8 bytes; a 2-byte gzip magic and a 262-byte tar are not wrappings', async () => {
  const header = wasm.subarray(0, 8);
  assert.equal(await unbox(header, 1 << 20), header);
  const seven = wasm.subarray(0, 7);
  assert.equal(await unbox(seven, 1 << 20), seven);
  const magic = Buffer.from([0x1f, 0x8b]);
  assert.equal(await unbox(magic, 1 << 20), magic);
  assert.equal(await unbox(Buffer.from([0x1f, 0x8b, 0]), 1 << 20).then((out) => out.length), 3, 'a broken gzip comes back as it was');
  const ustar = Buffer.alloc(263);
  ustar.write('ustar', 257, 'latin1');
  assert.equal(await unbox(ustar.subarray(0, 262), 1 << 20).then((out) => out.length), 262);
  const notMagic = Buffer.concat([Buffer.from([0x1f, 0x8c]), gzipSync(wasm).subarray(2)]);
  assert.equal(await unbox(notMagic, 1 << 20), notMagic, 'the second magic byte counts');
  assert.equal(await unbox(Buffer.concat([Buffer.from([0x1e, 0x8b]), gzipSync(wasm).subarray(2)]), 1 << 20).then((out) => out[0]), 0x1e);
});

test('a module exactly maxBytes long inflates; one byte more is a bomb', async () => {
  const big = Buffer.concat([wasm, Buffer.alloc(91)]);
  assert.equal((await unbox(gzipSync(big), 100)).length, 100);
  await assert.rejects(unbox(gzipSync(Buffer.concat([big, Buffer.alloc(1)])), 100), {
    message: 'the module inflates past 100 bytes (ISTIO_WASM_MAX_BINARY_SIZE_BYTES)',
  });
});

test('isWasm: the Wasm magic and version, 8 bytes at least', () => {
  assert.equal(isWasm(wasm.subarray(0, 8)), true);
  assert.equal(isWasm(wasm.subarray(0, 7)), false);
  assert.equal(isWasm(Buffer.concat([Buffer.from([0x01]), wasm.subarray(1)])), false);
});

test('only both gzip magic bytes make gzip: a tar whose first file name starts with one of them is still opened', async () => {
  for (const start of [[0x1f, 0x41], [0x41, 0x8b]]) {
    const archive = tar(wasm);
    Buffer.from(start).copy(archive, 0);
    assert.deepEqual(await unbox(archive, 1 << 20), wasm, JSON.stringify(start));
  }
});

test('without the ustar magic a tar-shaped header is not opened', async () => {
  const archive = tar(wasm);
  archive.write('xxxxx', 257, 'latin1');
  assert.equal(await unbox(archive, 1 << 20), archive);
});
