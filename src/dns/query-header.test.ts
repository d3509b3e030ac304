import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkHeader, type HeaderVerdict } from './query-header.ts';

/** A 12-byte header: flags byte 2 (QR and opcode), then the four section counts. */
function header({ flags = 0x01, counts = [1, 0, 0, 0], length = 12 }: { flags?: number; counts?: number[]; length?: number } = {}): Buffer {
  const message = Buffer.alloc(Math.max(length, 12));
  message.writeUInt16BE(0x1234, 0);
  message[2] = flags;
  counts.forEach((count, at) => message.writeUInt16BE(count, 4 + 2 * at));
  return message.subarray(0, length);
}

// Each limit on both sides: the header is all a hostile query is read for before it is refused.
const cases: [string, Buffer, HeaderVerdict][] = [
  ['11 bytes: no header', header({ length: 11 }), 'drop'],
  ['a bare 12-byte header with one question', header(), 'accept'],
  ['a response (QR set), even a well-formed one', header({ flags: 0x81 }), 'drop'],
  ['a response with a count past the limits', header({ flags: 0x80, counts: [9, 9, 9, 9] }), 'drop'],
  ['opcode QUERY (0) with RD clear', header({ flags: 0x00 }), 'accept'],
  ['opcode IQUERY (1)', header({ flags: 0x08 }), 'NOTIMP'],
  ['opcode STATUS (2)', header({ flags: 0x10 }), 'NOTIMP'],
  ['opcode NOTIFY (4)', header({ flags: 0x20 }), 'accept'],
  ['opcode UPDATE (5)', header({ flags: 0x28 }), 'NOTIMP'],
  ['opcode 15, the highest', header({ flags: 0x78 }), 'NOTIMP'],
  ['opcode NOTIMP before the counts are read', header({ flags: 0x28, counts: [2, 0, 0, 0] }), 'NOTIMP'],
  ['no question', header({ counts: [0, 0, 0, 0] }), 'FORMERR'],
  ['two questions', header({ counts: [2, 0, 0, 0] }), 'FORMERR'],
  ['65,535 questions', header({ counts: [65_535, 0, 0, 0] }), 'FORMERR'],
  ['one answer (a NOTIFY\'s SOA)', header({ counts: [1, 1, 0, 0] }), 'accept'],
  ['two answers', header({ counts: [1, 2, 0, 0] }), 'FORMERR'],
  ['one authority', header({ counts: [1, 0, 1, 0] }), 'accept'],
  ['two authorities', header({ counts: [1, 0, 2, 0] }), 'FORMERR'],
  ['two additionals (EDNS0 and TSIG)', header({ counts: [1, 0, 0, 2] }), 'accept'],
  ['three additionals', header({ counts: [1, 0, 0, 3] }), 'FORMERR'],
  ['every section at its limit', header({ counts: [1, 1, 1, 2] }), 'accept'],
];

describe('checkHeader', () => {
  for (const [name, message, want] of cases) it(`${want}: ${name}`, () => assert.equal(checkHeader(message), want));
});
