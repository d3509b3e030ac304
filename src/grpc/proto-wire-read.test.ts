import assert from 'node:assert/strict';
import { describe } from 'node:test';
import { it } from '../../test/support/sync-deadline.ts';
import { WireError } from './field-scanner.ts';
import { decodeVarint, eachLenField, encodeVarint, lenField, readField } from './proto-wire.ts';

const bytes = (...values: number[]) => Buffer.from(values);

describe('decodeVarint on whole messages, hostile ones included', () => {
  const rows: [name: string, input: Buffer, from: number, expected: [number, number] | undefined][] = [
    ['zero', bytes(0), 0, [0, 1]],
    ['two bytes, low first', bytes(0xac, 0x02), 0, [300, 2]],
    ['from an offset', bytes(0xff, 0x01), 1, [1, 2]],
    ['the largest of ten bytes', bytes(0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01), 0, [2 ** 63, 10]],
    ['empty', bytes(), 0, undefined],
    ['truncated (continuation bit on the last byte)', bytes(0x80), 0, undefined],
    ['past its offset', bytes(0x01), 1, undefined],
    ['eleven bytes (no varint is that long)', bytes(0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01), 0, undefined],
    ['eleven bytes from an offset', Buffer.concat([bytes(0x01), Buffer.alloc(10, 0x80), bytes(0x01)]), 1, undefined],
  ];
  for (const [name, input, from, expected] of rows) it(name, () => assert.deepEqual(decodeVarint(input, from), expected));

  it('round-trips what encodeVarint writes', () => {
    for (const value of [0, 1, 127, 128, 16_383, 16_384, 2 ** 31, 2 ** 53 - 1])
      assert.deepEqual(decodeVarint(encodeVarint(value), 0), [value, encodeVarint(value).length]);
  });
});

describe('readField: one field of a message, refused when it is not protobuf', () => {
  const fixed64 = Buffer.concat([bytes(0x19), Buffer.alloc(8)]);
  const fixed32 = Buffer.concat([bytes(0x25), Buffer.alloc(4)]);
  const good: [name: string, input: Buffer, at: number, end: number, expected: ReturnType<typeof readField>][] = [
    ['a varint field', bytes(0x08, 0x96, 0x01), 0, 3, { field: 1, len: undefined, next: 3 }],
    ['a length-delimited field', lenField(2, 'abc'), 0, 5, { field: 2, len: { start: 2, end: 5 }, next: 5 }],
    ['an empty length-delimited field', lenField(2, ''), 0, 2, { field: 2, len: { start: 2, end: 2 }, next: 2 }],
    ['a fixed64 field', fixed64, 0, 9, { field: 3, len: undefined, next: 9 }],
    ['a fixed32 field', fixed32, 0, 5, { field: 4, len: undefined, next: 5 }],
    ['a field at an offset', Buffer.concat([bytes(0x08, 0x01), lenField(5, 'x')]), 2, 5, { field: 5, len: { start: 4, end: 5 }, next: 5 }],
    ['a large field number', Buffer.concat([encodeVarint(536_870_911 * 8), bytes(0x01)]), 0, 6, { field: 536_870_911, len: undefined, next: 6 }],
  ];
  for (const [name, input, at, end, expected] of good) it(name, () => assert.deepEqual(readField(input, at, end), expected));

  const bad: [name: string, input: Buffer, at: number, end: number, message: string][] = [
    ['an empty message', bytes(), 0, 0, 'truncated tag at byte 0'],
    ['a truncated tag', bytes(0x80), 0, 1, 'truncated tag at byte 0'],
    ['a tag past the message end', bytes(0x08, 0x01), 0, 0, 'truncated tag at byte 0'],
    ['a length past the message end', bytes(0x12, 0x05, 0x61), 0, 3, 'field 2 is truncated: it runs past its message at byte 0'],
    [
      'a length past the end given (the buffer goes on)',
      Buffer.concat([lenField(2, 'abc'), bytes(0, 0)]),
      0,
      4,
      'field 2 is truncated: it runs past its message at byte 0',
    ],
    ['a truncated length', bytes(0x12, 0x80), 0, 2, 'field 2 is truncated: it runs past its message at byte 0'],
    ['a hostile length of 2^60', Buffer.concat([bytes(0x12), encodeVarint(2 ** 60)]), 0, 10, 'field 2 is truncated: it runs past its message at byte 0'],
    ['a truncated varint value', bytes(0x08, 0x80), 0, 2, 'truncated varint at byte 1'],
    ['a varint value past the end given', bytes(0x08, 0x96, 0x01), 0, 2, 'truncated varint at byte 1'],
    ['a fixed64 past the end', fixed64.subarray(0, 8), 0, 8, 'field 3 runs past its message at byte 0'],
    ['a fixed32 past the end given', fixed32, 0, 4, 'field 4 runs past its message at byte 0'],
    ['a group start (wire type 3)', bytes(0x0b), 0, 1, 'unsupported wire type 3 at byte 0'],
    ['a group end (wire type 4)', bytes(0x0c), 0, 1, 'unsupported wire type 4 at byte 0'],
    ['wire type 6', bytes(0x0e), 0, 1, 'unsupported wire type 6 at byte 0'],
    ['wire type 7 at an offset', bytes(0x08, 0x01, 0x0f), 2, 3, 'unsupported wire type 7 at byte 2'],
  ];
  for (const [name, input, at, end, message] of bad) {
    it(name, () => assert.throws(() => readField(input, at, end), (error: Error) => error instanceof WireError && error.message === message));
  }
});

describe('eachLenField', () => {
  const message = Buffer.concat([bytes(0x08, 0x01), lenField(2, 'ab'), Buffer.concat([bytes(0x19), Buffer.alloc(8)]), lenField(4, 'c'), lenField(2, '')]);

  it('hands over every length-delimited field of the range, in order, and skips the others', () => {
    const seen: string[] = [];
    eachLenField(message, { start: 0, end: message.length }, (field, start, end) => seen.push(`${field}:${message.subarray(start, end).toString()}`));
    assert.deepEqual(seen, ['2:ab', '4:c', '2:']);
  });

  it('reads only its range', () => {
    const seen: number[] = [];
    eachLenField(message, { start: 2, end: 6 }, (field) => seen.push(field));
    assert.deepEqual(seen, [2]);
    eachLenField(message, { start: 6, end: 6 }, () => assert.fail('an empty range has no field'));
  });

  it('throws WireError on a range that cuts a field', () => {
    assert.throws(() => eachLenField(message, { start: 0, end: 5 }, () => undefined), WireError);
  });
});
