import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import * as dnsPacket from 'dns-packet';
import { answersQuery, firstQuestion } from './answer-match.ts';

const question = { name: 'external.test', type: 'A' as const };
const query = dnsPacket.encode({ id: 5, type: 'query', questions: [question] });
const reply = (changes: Partial<dnsPacket.Packet> = {}) => dnsPacket.encode({ id: 5, type: 'response', questions: [question], ...changes });
/** `message` with the 16-bit word at `at` set to `value`. */
const patched = (message: Buffer, at: number, value: number) => {
  const copy = Buffer.from(message);
  copy.writeUInt16BE(value, at);
  return copy;
};
/** A header and then `rest` as the question section. */
const withQuestion = (rest: number[]) => Buffer.concat([query.subarray(0, 12), Buffer.from(rest)]);
const label = (text: string) => [text.length, ...Buffer.from(text)];

describe('firstQuestion', () => {
  const cases: [string, Buffer, string | undefined][] = [
    ['a name, type and class', query, 'external.test/1/1'],
    ['the root name', withQuestion([0, 0, 1, 0, 1]), '/1/1'],
    ['upper case, read lower', withQuestion([...label('EXTERNAL'), 0, 0, 28, 0, 3]), 'external/28/3'],
    ['a 63-byte label', withQuestion([...label('a'.repeat(63)), 0, 0, 1, 0, 1]), `${'a'.repeat(63)}/1/1`],
    ['a 64-byte label (a pointer or worse)', withQuestion([...label('a'.repeat(64)), 0, 0, 1, 0, 1]), undefined],
    ['a compression pointer', withQuestion([0xc0, 12, 0, 1, 0, 1]), undefined],
    ['a label running past the end', withQuestion([5, 0x61, 0x62]), undefined],
    ['a label ending exactly at the end, no terminator', withQuestion(label('abc')), undefined],
    ['a header alone', query.subarray(0, 12), undefined],
    ['a name without its class', withQuestion([...label('abc'), 0, 0, 1, 0]), undefined],
    ['a name with type and class exactly', withQuestion([...label('abc'), 0, 0, 1, 0, 1]), 'abc/1/1'],
  ];
  for (const [name, message, want] of cases) it(`${want ?? 'undefined'}: ${name}`, () => assert.equal(firstQuestion(message), want));
});

describe('answersQuery', () => {
  const cases: [string, Buffer, Buffer, boolean][] = [
    ['the same id and question', query, reply(), true],
    ['a reply whose question count is 0, question bytes or not', query, patched(reply(), 4, 0), false],
    ['a reply with two questions, the first the one asked', query, patched(Buffer.concat([reply(), reply().subarray(12)]), 4, 2), true],
    ['another class (CH)', query, dnsPacket.encode({ id: 5, type: 'response', questions: [{ ...question, class: 'CH' }] }), false],
    ['another id, the low byte', query, patched(reply(), 0, 4), false],
    ['another id, the high byte', query, patched(reply(), 0, 0x105), false],
    ['QR clear', query, patched(reply(), 2, 0), false],
    ['a query of 11 bytes', query.subarray(0, 11), reply(), false],
    ['a reply of 11 bytes', query, reply().subarray(0, 11), false],
    ['a 3-byte reply with the id and QR (no count to read: false, not a throw)', query, Buffer.from([0, 5, 0x80]), false],
    ['a 1-byte query (no id to read: false, not a throw)', Buffer.from([0]), reply(), false],
    ['a query whose question does not read, and a reply alike', withQuestion([0xc0, 12]), patched(withQuestion([0xc0, 12]), 2, 0x8000), false],
  ];
  for (const [name, asked, answer, want] of cases) it(`${want ? 'takes' : 'refuses'} ${name}`, () => assert.equal(answersQuery(asked, answer), want));
});
