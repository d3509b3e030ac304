import assert from 'node:assert/strict';
import { describe } from 'node:test';
import { it } from '../../test/support/sync-deadline.ts';
import { advanced, FieldScanner, NoProgress, WireError } from './field-scanner.ts';
import { encodeVarint } from './proto-wire.ts';

/** Edges of field-scanner.test.ts that mutation testing showed untested. */
const len = (field: number, value: Buffer | string) => {
  const bytes = Buffer.from(value);
  return Buffer.concat([encodeVarint(field * 8 + 2), encodeVarint(bytes.length), bytes]);
};

function scan(message: Buffer, size: number, wanted: number[], maxValueBytes?: number): { seen: string[]; values: Buffer[] } {
  const seen: string[] = [];
  const values: Buffer[] = [];
  const scanner = new FieldScanner({
    field: (field, wireType) => (seen.push(`${field}/${wireType}`), wanted.includes(field)),
    value: (field, bytes) => (seen.push(`${field}=${bytes.toString()}`), values.push(bytes)),
  }, message.length, maxValueBytes);
  for (let pos = 0; pos < message.length; pos += size) scanner.push(message.subarray(pos, pos + size));
  scanner.finish();
  return { seen, values };
}

const rejects = (bytes: Buffer, message: RegExp, sizes = [1, bytes.length]) => {
  for (const size of sizes) {
    assert.throws(
      () => scan(bytes, size, [1]),
      (thrown: unknown) => thrown instanceof WireError && thrown.name === 'WireError' && message.test(thrown.message),
      `${message} in chunks of ${size}`,
    );
  }
};

describe('FieldScanner, edges', () => {
  it('a wanted empty value that ends the message is given, and the message ends cleanly', () => {
    assert.deepEqual(scan(len(1, ''), 1, [1]).seen, ['1/2', '1=']);
  });

  it('a message that stops after a tag, inside a length, or inside a tag is refused', () => {
    rejects(Buffer.from([0x0a]), /^message ends inside field 1$/);
    rejects(Buffer.from([0x0a, 0x80]), /^message ends inside field 1$/);
    rejects(Buffer.from([0x80]), /^message ends inside field \(tag\)$/);
  });

  it('a varint of 10 bytes is read; one of 11 is refused at the byte it started, however it is split', () => {
    const ten = Buffer.concat([Buffer.from([0x10]), Buffer.alloc(9, 0xff), Buffer.from([0x01])]);
    assert.deepEqual(scan(ten, 1, []).seen, ['2/0']);
    rejects(Buffer.concat([Buffer.from([0x10]), Buffer.alloc(10, 0xff), Buffer.from([0x01])]), /^varint longer than 10 bytes at byte 1$/, [1, 3, 12]);
  });

  it('a wanted value of exactly the limit is given', () => {
    assert.deepEqual(scan(len(1, 'y'.repeat(50)), 7, [1], 50).seen, ['1/2', `1=${'y'.repeat(50)}`]);
  });

  it('a length longer than what is left is refused at once, also when shorter than the whole message', () => {
    rejects(Buffer.from('\x0a\x06short'), /^field 1 runs past the end of the message \(6 bytes at byte 2\)$/);
  });

  it('a value inside one chunk is handed over without a copy; one across chunks is joined', () => {
    const message = len(1, 'nonce');
    const { values } = scan(message, message.length, [1]);
    message[message.length - 1] = 'E'.charCodeAt(0);
    assert.equal(values[0]!.toString(), 'noncE', 'a view of the pushed bytes, not a copy');
    assert.equal(scan(message, 2, [1]).values[0]!.toString(), 'noncE');
  });
});

describe('advanced, the no-progress guard of the wire parsers', () => {
  it('passes a step that moved forward, even by one byte', () => {
    assert.equal(advanced(3, 4, 'a parser'), 4);
    assert.equal(advanced(0, 1000, 'a parser'), 1000);
  });

  it('refuses a step that ended where it began or before it: a NoProgress, a WireError, naming the parser and the byte', () => {
    for (const to of [3, 2]) {
      assert.throws(() => advanced(3, to, 'the test parser'), (error: unknown) =>
        error instanceof NoProgress && error instanceof WireError && error.name === 'NoProgress'
        && error.message === `the test parser made no progress at byte 3 (its step ended at ${to})`);
    }
  });
});
