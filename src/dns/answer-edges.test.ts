import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import * as dnsPacket from 'dns-packet';
import type { Packet } from 'dns-packet';
import { answerQuery, maxTcpMessageBytes, sizeLimit, type AnswerContext } from './answer.ts';
import { LookupTable } from './lookup-table.ts';

const info = (ips: string[]) => ({ ips, registry: '', shortname: '', namespace: '', altHosts: [] });
const addresses = Array.from({ length: 60 }, (_, at) => `198.18.1.${at}`);

function context(overrides: Partial<AnswerContext> = {}): AnswerContext {
  const table = new LookupTable({ namespace: 'default', domain: 'default.svc.cluster.local', search: ['default.svc.cluster.local'] });
  table.add('one.example.com', info(['198.18.0.1']));
  table.add('many.example.com', info(addresses));
  return { table, protocol: 'udp', rotation: () => 0, ...overrides };
}
const opt = (udpPayloadSize: number) => ({ additionals: [{ type: 'OPT', name: '.', udpPayloadSize }] as Packet['additionals'] });
const query = (name: string, extra: Partial<Packet> = {}) => dnsPacket.encode({ id: 77, type: 'query', questions: [{ name, type: 'A' }], ...extra });

function answered(message: Buffer, ctx = context()) {
  const verdict = answerQuery(message, ctx);
  if (verdict.kind !== 'answer') throw new Error(`not answered: ${verdict.kind}`);
  return { ...verdict, packet: dnsPacket.decode(verdict.response) };
}
const addressesOf = (packet: Packet) => (packet.answers ?? []).flatMap((answer) => (answer.type === 'A' ? [answer.data] : []));

describe('sizeLimit', () => {
  const cases: [string, Partial<Packet>, 'udp' | 'tcp', number][] = [
    ['TCP, whatever EDNS0 says', opt(1_232), 'tcp', maxTcpMessageBytes],
    ['UDP without EDNS0', {}, 'udp', 512],
    ['UDP with an EDNS0 size below 512', opt(100), 'udp', 512],
    ['UDP with 511', opt(511), 'udp', 512],
    ['UDP with 513', opt(513), 'udp', 513],
    ['UDP with 65,507', opt(65_507), 'udp', 65_507],
    ['UDP with 65,508', opt(65_508), 'udp', 65_507],
    ['UDP with a non-OPT additional only', { additionals: [{ type: 'A', name: 'x.test', data: '198.18.0.1' }] as Packet['additionals'] }, 'udp', 512],
    [
      'UDP with EDNS0 after another additional',
      { additionals: [{ type: 'A', name: 'x.test', data: '198.18.0.1' }, { type: 'OPT', name: '.', udpPayloadSize: 4096 }] as Packet['additionals'] },
      'udp',
      4096,
    ],
  ];
  for (const [name, extra, protocol, want] of cases)
    it(`${want}: ${name}`, () => assert.equal(sizeLimit(dnsPacket.decode(query('one.example.com', extra)), protocol), want));
});

describe('answerQuery: flags, EDNS0 and truncation', () => {
  it('echoes RD and CD, sets RA, and AA only for a table answer; other query flags are not echoed', () => {
    const flags = dnsPacket.RECURSION_DESIRED | dnsPacket.CHECKING_DISABLED | dnsPacket.AUTHENTIC_DATA | dnsPacket.AUTHORITATIVE_ANSWER;
    const { packet } = answered(query('one.example.com', { flags }));
    assert.deepEqual([packet.flag_rd, packet.flag_cd, packet.flag_ra, packet.flag_aa, packet.flag_ad, packet.flag_tc], [true, true, true, true, false, false]);
    const plain = answered(query('one.example.com')).packet;
    assert.deepEqual([plain.flag_rd, plain.flag_cd, plain.flag_ra], [false, false, true]);
    const servfail = answered(query('one.example.com', { flags }), context({ table: undefined })).packet;
    assert.deepEqual([servfail.flag_aa, servfail.flag_rd, servfail.flags! & 0xf], [false, true, 2]);
  });

  it('answers with an OPT record (1232) only when the query had one', () => {
    assert.deepEqual(
      answered(query('one.example.com', opt(4096))).packet.additionals?.map((record) => [record.type, 'udpPayloadSize' in record ? record.udpPayloadSize : 0]),
      [['OPT', 1232]],
    );
    assert.deepEqual(answered(query('one.example.com')).packet.additionals, []);
  });

  it('NOTIMP and FORMERR answer with the id and the header alone', () => {
    const update = Buffer.from(query('one.example.com', { flags: dnsPacket.RECURSION_DESIRED }));
    update[2] = 0x28 | 0x01; // opcode UPDATE, RD
    const refused = answered(update);
    assert.deepEqual(
      [refused.rcode, refused.packet.id, refused.packet.flags! & 0xf, refused.packet.questions, refused.packet.flag_rd, refused.truncated],
      ['NOTIMP', 77, 4, [], false, false],
    );
  });

  it('keeps the most answers that fit, exactly at the limit and one byte under it', () => {
    const full = answered(query('many.example.com', opt(65_507))).response.length;
    const exact = answered(query('many.example.com', opt(full)));
    assert.deepEqual([exact.truncated, exact.packet.flag_tc, addressesOf(exact.packet).length], [false, false, 60]);
    const under = answered(query('many.example.com', opt(full - 1)));
    assert.deepEqual([under.truncated, under.packet.flag_tc, addressesOf(under.packet)], [true, true, addresses.slice(0, 59)]);
    const cutExact = answered(query('many.example.com', opt(under.response.length)));
    assert.deepEqual([cutExact.response.length, addressesOf(cutExact.packet).length], [under.response.length, 59]);
    for (const limit of [512, 700, 1_000]) {
      const cut = answered(query('many.example.com', opt(limit)));
      const kept = addressesOf(cut.packet).length;
      assert.ok(cut.response.length <= limit && kept > 0, `${cut.response.length} bytes, ${kept} kept`);
      const oneMore = dnsPacket.encode({ ...cut.packet, answers: [...cut.packet.answers!, cut.packet.answers![0]!] });
      assert.ok(oneMore.length > limit, `${kept} answers kept in ${limit} bytes: one more would fit`);
    }
  });

  it('rotates by the rotation modulo the addresses, CNAME in front, and asks no rotation for one address', () => {
    assert.deepEqual(addressesOf(answered(query('many.example.com', opt(4096)), context({ rotation: () => 61 })).packet).slice(0, 2), [
      '198.18.1.1',
      '198.18.1.2',
    ]);
    const viaSearch = answered(query('many.example.com.default.svc.cluster.local', opt(4096)), context({ rotation: () => 2 })).packet;
    assert.deepEqual(viaSearch.answers?.slice(0, 2).map((answer) => answer.type), ['CNAME', 'A']);
    assert.equal(addressesOf(viaSearch)[0], '198.18.1.2');
    assert.equal(addressesOf(viaSearch).at(-1), '198.18.1.1');
    let asked = 0;
    answered(query('one.example.com'), context({ rotation: () => asked++ }));
    assert.equal(asked, 0);
  });
});
