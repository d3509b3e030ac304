import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import * as dnsPacket from 'dns-packet';
import type { Packet } from 'dns-packet';
import { answerQuery, lookup, type AnswerContext } from './answer.ts';
import { LookupTable } from './lookup-table.ts';
import { encodeNameTable, nameTableEntriesAt, readNameEntry } from './name-table-wire.ts';

const pod = { namespace: 'default', domain: 'default.svc.cluster.local', search: ['default.svc.cluster.local', 'svc.cluster.local', 'cluster.local'] };
const info = (ips: string[], extra: Partial<{ registry: string; shortname: string; namespace: string }> = {}) => ({
  ips,
  registry: '',
  shortname: '',
  namespace: '',
  altHosts: [],
  ...extra,
});

/** Built as the store builds it: from a NameTable's bytes, each name keeping where its entry starts. */
function table(): LookupTable {
  const bytes = encodeNameTable([
    ['db.legacy.internal', info(['240.240.0.1'])],
    ['v6only.example.org', info(['2001:db8::1'])],
    ['reviews.default.svc.cluster.local', info(['10.0.0.9'], { registry: 'Kubernetes', shortname: 'reviews', namespace: 'default' })],
    ['ratings.other.svc.cluster.local', info(['10.0.0.10'], { registry: 'Kubernetes', shortname: 'ratings', namespace: 'other' })],
    ['*.wild.example.com', info(['240.240.0.2'])],
    ['headless.example.com', info(Array.from({ length: 60 }, (_, at) => `10.1.${at >> 8}.${at & 255}`))],
    ['broken.example.com', info(['not-an-ip'])],
  ]);
  const built = new LookupTable(pod, bytes);
  for (const [at, entry] of nameTableEntriesAt(bytes)) built.add(...readNameEntry(entry), at);
  return built;
}

const context = (overrides: Partial<AnswerContext> = {}): AnswerContext => ({ table: table(), protocol: 'udp', rotation: () => 0, ...overrides });
const query = (name: string, type: 'A' | 'AAAA' | 'MX' = 'A', extra: Partial<Packet> = {}) =>
  dnsPacket.encode({ id: 4242, type: 'query', flags: dnsPacket.RECURSION_DESIRED, questions: [{ name, type }], ...extra });

function answered(message: Buffer, ctx = context()) {
  const verdict = answerQuery(message, ctx);
  assert.equal(verdict.kind, 'answer', `answered: ${JSON.stringify(verdict)}`);
  if (verdict.kind !== 'answer') throw new Error('unreachable');
  return { ...verdict, packet: dnsPacket.decode(verdict.response) };
}

const data = (packet: Packet) => (packet.answers ?? []).map((answer) => `${answer.type} ${answer.name} ${'data' in answer ? String(answer.data) : ''}`);

describe('answerQuery', () => {
  const cases: { name: string; type?: 'A' | 'AAAA'; answers: string[] }[] = [
    { name: 'db.legacy.internal', answers: ['A db.legacy.internal 240.240.0.1'] },
    { name: 'DB.Legacy.Internal', answers: ['A db.legacy.internal 240.240.0.1'] },
    { name: 'reviews', answers: ['A reviews 10.0.0.9'] },
    { name: 'reviews.default', answers: ['A reviews.default 10.0.0.9'] },
    { name: 'reviews.default.svc', answers: ['A reviews.default.svc 10.0.0.9'] },
    { name: 'reviews.default.svc.cluster.local', answers: ['A reviews.default.svc.cluster.local 10.0.0.9'] },
    { name: 'ratings.other', answers: ['A ratings.other 10.0.0.10'] },
    // What a resolver walking the search list asks first: a CNAME to the real name, then its address.
    {
      name: 'db.legacy.internal.default.svc.cluster.local',
      answers: ['CNAME db.legacy.internal.default.svc.cluster.local db.legacy.internal', 'A db.legacy.internal 240.240.0.1'],
    },
    { name: 'api.wild.example.com', answers: ['A api.wild.example.com 240.240.0.2'] },
    { name: 'a.b.wild.example.com', answers: ['A a.b.wild.example.com 240.240.0.2'] },
    // A wildcard's twin under the first search domain: a CNAME to the wildcard, whose address the wildcard owns.
    {
      name: 'api.wild.example.com.default.svc.cluster.local',
      answers: ['CNAME api.wild.example.com.default.svc.cluster.local *.wild.example.com', 'A *.wild.example.com 240.240.0.2'],
    },
    { name: 'v6only.example.org', type: 'AAAA', answers: ['AAAA v6only.example.org 2001:db8::1'] },
    // A known name without the family: NOERROR and no records, never NXDOMAIN (Istio issue 31250).
    { name: 'v6only.example.org', type: 'A', answers: [] },
    { name: 'db.legacy.internal', type: 'AAAA', answers: [] },
  ];
  for (const { name, type = 'A', answers } of cases) {
    it(`${type} ${name} → ${answers.join(', ') || 'NOERROR, no records'}`, () => {
      const { packet, rcode } = answered(query(name, type));
      assert.equal(rcode, 'NOERROR');
      assert.equal(packet.id, 4242);
      assert.equal(packet.flag_aa, true);
      assert.equal(packet.flag_rd, true);
      assert.deepEqual(data(packet), answers);
      assert.ok((packet.answers ?? []).every((answer) => 'ttl' in answer && answer.ttl === 30));
    });
  }

  for (const name of ['ratings', 'unknown.example.com', 'broken.example.com', 'reviews.other', 'wild.example.com']) {
    it(`forwards ${name}, which the table does not answer`, () => assert.deepEqual(answerQuery(query(name), context()), { kind: 'forward', name }));
  }

  it('forwards other record types of known names, as Istio does', () => {
    assert.equal(answerQuery(query('db.legacy.internal', 'MX'), context()).kind, 'forward');
  });

  it('answers SERVFAIL before the first table', () => {
    const { packet, rcode } = answered(query('db.legacy.internal'), context({ table: undefined }));
    assert.equal(rcode, 'SERVFAIL');
    assert.equal((packet.flags ?? 0) & 0xf, 2);
  });

  it('forwards before the first table when told to (port 53 served as root, as Istio)', () => {
    assert.deepEqual(answerQuery(query('db.legacy.internal'), context({ table: undefined, forwardBeforeTable: true })), {
      kind: 'forward',
      name: 'db.legacy.internal',
    });
  });

  it('answers FORMERR to garbage with a header, drops shorter garbage and responses', () => {
    const garbage = Buffer.concat([Buffer.from([0x12, 0x34, 0x01, 0x00, 0x00, 0x05]), Buffer.alloc(20, 0xff)]);
    const { packet, rcode } = answered(garbage);
    assert.equal(rcode, 'FORMERR');
    assert.equal(packet.id, 0x1234);
    assert.deepEqual(answerQuery(Buffer.from([1, 2, 3]), context()), { kind: 'drop' });
    assert.deepEqual(answerQuery(dnsPacket.encode({ id: 1, type: 'response', questions: [{ name: 'db.legacy.internal', type: 'A' }] }), context()), {
      kind: 'drop',
    });
  });

  it('rotates the addresses of a headless service', () => {
    let turn = 0;
    const firsts = [0, 1, 2].map(
      () =>
        data(
          answered(
            query('headless.example.com', 'A', { additionals: [{ type: 'OPT', name: '.', udpPayloadSize: 4096 }] as Packet['additionals'] }),
            context({ rotation: () => turn++ }),
          ).packet,
        )[0],
    );
    assert.deepEqual(firsts, ['A headless.example.com 10.1.0.0', 'A headless.example.com 10.1.0.1', 'A headless.example.com 10.1.0.2']);
  });

  it('truncates to 512 bytes over UDP without EDNS0, with TC set; to the EDNS0 size with it; never over TCP', () => {
    const plain = answered(query('headless.example.com'));
    assert.ok(plain.response.length <= 512, `${plain.response.length} bytes`);
    assert.equal(plain.packet.flag_tc, true);
    assert.ok(plain.packet.answers!.length > 0 && plain.packet.answers!.length < 60);
    const edns = answered(query('headless.example.com', 'A', { additionals: [{ type: 'OPT', name: '.', udpPayloadSize: 4096 }] as Packet['additionals'] }));
    assert.equal(edns.packet.flag_tc, false);
    assert.equal(edns.packet.answers!.length, 60);
    const tcp = answered(query('headless.example.com'), context({ protocol: 'tcp' }));
    assert.equal(tcp.packet.flag_tc, false);
    assert.equal(tcp.packet.answers!.length, 60);
  });

  it('answers FORMERR to a query without a question, as Istio\'s library does', () => {
    assert.equal(answered(dnsPacket.encode({ id: 7, type: 'query', questions: [] })).rcode, 'FORMERR');
  });

  it('answers no EDNS0 record to a query whose only additional is no OPT', () => {
    const additionals = [{ type: 'A', name: 'x.test', ttl: 1, data: '198.18.0.1' }] as Packet['additionals'];
    const { packet } = answered(query('db.legacy.internal', 'A', { additionals }));
    assert.deepEqual([data(packet), packet.additionals], [['A db.legacy.internal 240.240.0.1'], []]);
  });
});

describe('lookup', () => {
  it('names its records without the trailing dot of the table keys', () => {
    const names = (name: string) => lookup(table(), { name, type: 'A' })?.map((answer) => `${answer.name} ${'data' in answer ? String(answer.data) : ''}`);
    assert.deepEqual(names('db.legacy.internal'), ['db.legacy.internal 240.240.0.1']);
    assert.deepEqual(names('db.legacy.internal.default.svc.cluster.local'), [
      'db.legacy.internal.default.svc.cluster.local db.legacy.internal',
      'db.legacy.internal 240.240.0.1',
    ]);
  });
});
