import assert from 'node:assert/strict';
import { describe } from 'node:test';
import { it } from '../../test/support/sync-deadline.ts';
import { FieldScanner, WireError } from './field-scanner.ts';
import { encodeVarint } from './proto-wire.ts';

const len = (field: number, value: Buffer | string) => {
  const bytes = Buffer.from(value);
  return Buffer.concat([encodeVarint(field * 8 + 2), encodeVarint(bytes.length), bytes]);
};
const varint = (field: number, value: number) => Buffer.concat([encodeVarint(field * 8), encodeVarint(value)]);
const fixed64 = (field: number) => Buffer.concat([encodeVarint(field * 8 + 1), Buffer.alloc(8, 1)]);
const fixed32 = (field: number) => Buffer.concat([encodeVarint(field * 8 + 5), Buffer.alloc(4, 1)]);

/** Scans `message` in chunks of `size`; returns what the sink saw. */
function scanInChunks(message: Buffer, size: number, wanted: number[], maxValueBytes?: number): string[] {
  const seen: string[] = [];
  const scanner = new FieldScanner({
    field: (field, wireType) => (seen.push(`${field}/${wireType}`), wanted.includes(field)),
    value: (field, bytes) => seen.push(`${field}=${bytes.toString()}`),
  }, message.length, maxValueBytes);
  for (let pos = 0; pos < message.length; pos += size) scanner.push(message.subarray(pos, pos + size));
  scanner.finish();
  return seen;
}

describe('FieldScanner', () => {
  const message = Buffer.concat([len(1, 'v1'), varint(2, 2 ** 40), fixed64(3), len(4, 'x'.repeat(200)), fixed32(5), len(6, ''), len(7, 'nonce')]);
  const expected = ['1/2', '1=v1', '2/0', '3/1', '4/2', '5/5', '6/2', '6=', '7/2', '7=nonce'];

  it('sees every field once and the values asked for, however the bytes are split', () => {
    for (const size of [1, 2, 3, 5, 11, 128, 199, 200, 201, message.length]) {
      assert.deepEqual(scanInChunks(message, size, [1, 6, 7]), expected, `chunks of ${size}`);
    }
  });

  it('accepts an empty message', () => {
    assert.deepEqual(scanInChunks(Buffer.alloc(0), 1, []), []);
  });

  const bad: [string, Buffer, RegExp][] = [
    ['field number 0', Buffer.from([0x00, 0x01]), /field number 0 at byte 0/],
    ['a group (wire type 3)', Buffer.from([0x0b]), /unsupported wire type 3/],
    ['a length past the end', Buffer.from('\x0a\x10short'), /field 1 runs past the end/],
    ['a truncated varint', Buffer.from([0x10, 0x80]), /ends inside field 2/],
    ['a truncated fixed64', Buffer.concat([encodeVarint(9), Buffer.alloc(3)]), /runs past the end/],
    ['an 11-byte varint', Buffer.concat([Buffer.from([0x10]), Buffer.alloc(11, 0xff)]), /varint longer than 10 bytes at byte 1/],
  ];
  for (const [name, bytes, error] of bad) {
    it(`rejects ${name}`, () => {
      for (const size of [1, bytes.length])
        assert.throws(
          () => scanInChunks(bytes, size, [1]),
          (thrown: Error) => thrown instanceof WireError && error.test(thrown.message),
        );
    });
  }

  it('refuses a wanted value over its limit, but skips an unwanted one of any size', () => {
    const big = len(1, 'y'.repeat(100));
    assert.throws(() => scanInChunks(big, 10, [1], 50), /field 1 is 100 bytes, more than the 50 allowed/);
    assert.deepEqual(scanInChunks(big, 10, [], 50), ['1/2']);
  });

  it('rejects bytes past the declared length, and a message that stops short', () => {
    const scanner = new FieldScanner({ field: () => false, value: () => undefined }, 2);
    assert.throws(() => scanner.push(varint(1, 300)), /longer than its declared 2 bytes/);
    const short = new FieldScanner({ field: () => false, value: () => undefined }, 4);
    short.push(varint(1, 1));
    assert.throws(() => short.finish(), /ended 2 bytes early/);
  });
});
