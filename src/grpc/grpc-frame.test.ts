import assert from 'node:assert/strict';
import { describe } from 'node:test';
import { it } from '../../test/support/sync-deadline.ts';
import { frame as frameBytes, FrameTooLarge, GrpcFrameReader } from './grpc-frame.ts';

const frame = (body: string) => frameBytes(Buffer.from(body));

/** Feeds `stream` in chunks of `size`; returns the messages as begin/data/end events joined. */
function readInChunks(stream: Buffer, size: number, maxLength = 1000): { messages: string[]; atBoundary: boolean } {
  const messages: string[] = [];
  let current = '';
  const reader = new GrpcFrameReader({
    begin: (length) => (current = `${length}:`),
    data: (bytes) => (current += bytes.toString()),
    end: () => messages.push(current),
  }, maxLength);
  for (let pos = 0; pos < stream.length; pos += size) reader.push(stream.subarray(pos, pos + size));
  return { messages, atBoundary: reader.atBoundary };
}

describe('GrpcFrameReader', () => {
  const stream = Buffer.concat([frame('hello'), frame(''), frame('x'.repeat(40))]);

  it('splits messages the same way whatever the chunk boundaries', () => {
    for (const size of [1, 2, 4, 5, 6, 9, 17, stream.length]) {
      assert.deepEqual(readInChunks(stream, size), { messages: ['5:hello', '0:', `40:${'x'.repeat(40)}`], atBoundary: true }, `chunks of ${size}`);
    }
  });

  it('knows when a stream stops inside a message or a prefix', () => {
    assert.equal(readInChunks(stream.subarray(0, 3), 1).atBoundary, false);
    assert.equal(readInChunks(stream.subarray(0, 7), 1).atBoundary, false);
  });

  it('refuses compressed messages, unknown flags and messages over the limit', () => {
    const compressed = Buffer.from([1, 0, 0, 0, 1, 0x61]);
    assert.throws(() => readInChunks(compressed, 1), /compressed message/);
    assert.throws(() => readInChunks(Buffer.from([7, 0, 0, 0, 0]), 5), /bad message flag 7/);
    assert.deepEqual(readInChunks(frame('x'.repeat(10)), 3, 10).messages, [`10:${'x'.repeat(10)}`], 'exactly the limit is accepted');
    assert.throws(
      () => readInChunks(frame('x'.repeat(11)), 3, 10),
      (error: Error) => error instanceof FrameTooLarge && /11 bytes, more than the 10 allowed/.test(error.message),
    );
  });
});
