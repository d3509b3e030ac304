import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import * as dnsPacket from 'dns-packet';
import type { Packet } from 'dns-packet';
import { answerQuery, maxTcpMessageBytes, maxUdpMessageBytes, serverFailure, sizeLimit, type AnswerContext } from './answer.ts';
import { LookupTable } from './lookup-table.ts';
import { checkHeader } from './query-header.ts';

const info = (ips: string[]) => ({ ips, registry: '', shortname: '', namespace: '', altHosts: [] });
/** 6,000 addresses: ~96 KB of A records, more than a datagram or a TCP message carries. */
const huge = Array.from({ length: 6_000 }, (_, at) => `198.18.${at >> 8}.${at & 255}`);

function context(overrides: Partial<AnswerContext> = {}): AnswerContext {
  const table = new LookupTable({ namespace: 'default', domain: '', search: [] });
  table.add('big.example.com', info(huge));
  table.add('db.legacy.internal', info(['240.240.0.1']));
  return { table, protocol: 'udp', rotation: () => 0, ...overrides };
}

const questions = (count: number) => Array.from({ length: count }, (_, at) => ({ name: `q${at}.db.legacy.internal`, type: 'A' as const }));
const edns = (size: number) => ({ additionals: [{ type: 'OPT', name: '.', udpPayloadSize: size }] as Packet['additionals'] });

function answered(message: Buffer, ctx = context()) {
  const verdict = answerQuery(message, ctx);
  if (verdict.kind !== 'answer') throw new Error(`not answered: ${verdict.kind}`);
  return { ...verdict, packet: dnsPacket.decode(verdict.response) };
}

describe('answerQuery with hostile queries', () => {
  it('forwards a one-label name even when the table holds a wildcard over the empty name', () => {
    const table = new LookupTable({ namespace: 'default', domain: '', search: [] });
    table.add('*..', info(['198.18.9.9'])); // a NameTable holds whatever the control plane sent
    assert.deepEqual(answerQuery(dnsPacket.encode({ id: 3, type: 'query', questions: [{ name: 'x', type: 'A' }] }), context({ table })), {
      kind: 'forward',
      name: 'x',
    });
  });

  it('refuses 10,900 questions with FORMERR, echoing none of them (it was a 262 KB answer that killed the agent over TCP)', () => {
    const message = dnsPacket.encode({ id: 77, type: 'query', questions: questions(10_900) });
    for (const protocol of ['udp', 'tcp'] as const) {
      const { rcode, packet, response } = answered(message, context({ protocol }));
      assert.equal(rcode, 'FORMERR');
      assert.equal(packet.id, 77);
      assert.deepEqual(packet.questions, []);
      assert.ok(response.length <= 512, `${response.length} bytes`);
    }
  });

  it('refuses two questions, and a query with records piled in its other sections, with FORMERR', () => {
    assert.equal(answered(dnsPacket.encode({ id: 1, type: 'query', questions: questions(2) })).rcode, 'FORMERR');
    const answers = Array.from({ length: 3 }, () => ({ type: 'A' as const, name: 'x', data: '198.18.0.1' }));
    assert.equal(answered(dnsPacket.encode({ id: 1, type: 'query', questions: questions(1), answers })).rcode, 'FORMERR');
  });

  it('answers NOTIMP to an opcode other than QUERY and NOTIFY (an UPDATE)', () => {
    const message = dnsPacket.encode({ id: 9, type: 'query', questions: questions(1) });
    message[2] = (message[2]! & 0x87) | (5 << 3);
    assert.equal(answered(message).rcode, 'NOTIMP');
  });

  const sizes: [string, Partial<AnswerContext>, Partial<Packet>, number][] = [
    ['UDP without EDNS0', {}, {}, 512],
    ['UDP with EDNS0 4096', {}, edns(4096), 4096],
    ['UDP with EDNS0 65535 (more than a datagram carries)', {}, edns(65_535), maxUdpMessageBytes],
    ['TCP', { protocol: 'tcp' }, {}, maxTcpMessageBytes],
  ];
  for (const [name, overrides, extra, limit] of sizes) {
    it(`keeps a 6,000-address answer within ${limit} bytes over ${name}, with TC set`, () => {
      const { rcode, packet, response } = answered(
        dnsPacket.encode({ id: 5, type: 'query', questions: [{ name: 'big.example.com', type: 'A' }], ...extra }),
        context(overrides),
      );
      assert.equal(rcode, 'NOERROR');
      assert.ok(response.length <= limit, `${response.length} bytes > ${limit}`);
      assert.ok(response.length > limit - 100, `${response.length} bytes: the answer fills what it may`);
      assert.equal(packet.flag_tc, true);
    });
  }

  it('takes an EDNS0 size of 65535 as the 65,507 bytes a datagram carries (a larger send fails with EMSGSIZE: no answer)', () => {
    assert.equal(maxUdpMessageBytes, 65_507);
    assert.equal(sizeLimit(dnsPacket.decode(dnsPacket.encode({ type: 'query', questions: questions(1), ...edns(65_535) })), 'udp'), 65_507);
  });

  it('reads only the header to refuse: drop for short or response, FORMERR for counts, accept for one question', () => {
    const header = (bytes: number[]) => Buffer.from([0, 1, ...bytes, ...Array(Math.max(0, 10 - bytes.length)).fill(0)]);
    assert.equal(checkHeader(Buffer.from([0, 1, 0])), 'drop');
    assert.equal(checkHeader(header([0x80, 0, 0, 1])), 'drop');
    assert.equal(checkHeader(header([0x01, 0, 0x2a, 0x94])), 'FORMERR');
    assert.equal(checkHeader(header([0x01, 0, 0, 1, 0, 0, 0, 0, 0, 3])), 'FORMERR');
    assert.equal(checkHeader(header([0x01, 0, 0, 1, 0, 0, 0, 0, 0, 1])), 'accept');
    assert.equal(checkHeader(header([0x20 | 0x01, 0, 0, 1])), 'accept'); // NOTIFY
  });

  it('SERVFAILs a failed forward with the first question only', () => {
    const packet = dnsPacket.decode(serverFailure(dnsPacket.encode({ id: 3, type: 'query', flags: dnsPacket.RECURSION_DESIRED, questions: questions(1) })));
    assert.equal((packet.flags ?? 0) & 0xf, 2);
    assert.equal(packet.questions?.length, 1);
    assert.equal(packet.flag_rd, true);
  });
});
