import assert from 'node:assert/strict';
import { createSocket, type Socket } from 'node:dgram';
import { createServer, type Server } from 'node:net';
import { after, before, describe, it } from 'node:test';
import * as dnsPacket from 'dns-packet';
import { FakeClock } from '../shared/clock.ts';
import { answersQuery } from './answer-match.ts';
import { Forwarder } from './forwarder.ts';

const question = { name: 'external.test', type: 'A' as const };
const query = (id: number) => dnsPacket.encode({ id, type: 'query', flags: dnsPacket.RECURSION_DESIRED, questions: [question] });
const reply = (id: number, data: string, asked: dnsPacket.Question = question) =>
  dnsPacket.encode({ id, type: 'response', questions: [asked], answers: [{ type: 'A', name: asked.name, ttl: 60, data }] });
const bind = (socket: Socket, port: number, host: string) => new Promise<void>((resolve) => socket.bind(port, host, resolve));
const send = (socket: Socket, message: Buffer, port: number, host: string) => new Promise<void>((resolve) => socket.send(message, port, host, () => resolve()));
const dataOf = (message: Buffer) => dnsPacket.decode(message).answers?.map((answer) => ('data' in answer ? answer.data : undefined));

describe('answersQuery', () => {
  const cases: [string, Buffer, boolean][] = [
    ['the same id and question', reply(5, '198.18.0.9'), true],
    ['the question in other letter case', reply(5, '198.18.0.9', { name: 'EXTERNAL.test', type: 'A' }), true],
    ['another id', reply(6, '198.18.0.9'), false],
    ['another name', reply(5, '198.18.0.9', { name: 'other.test', type: 'A' }), false],
    ['another type', dnsPacket.encode({ id: 5, type: 'response', questions: [{ name: 'external.test', type: 'AAAA' }] }), false],
    ['no question', dnsPacket.encode({ id: 5, type: 'response', questions: [] }), false],
    ['a query, not a response', query(5), false],
    ['a header alone', reply(5, '198.18.0.9').subarray(0, 12), false],
  ];
  for (const [name, response, expected] of cases)
    it(`${expected ? 'takes' : 'refuses'} ${name}`, () => assert.equal(answersQuery(query(5), response), expected));
});

describe('Forwarder against spoofed answers', () => {
  // The resolver on 127.0.0.1:port; spoofers on 127.0.0.1 (another port) and on 127.0.0.3 (the same port).
  const resolver = createSocket('udp4');
  const otherPort = createSocket('udp4');
  const otherAddress = createSocket('udp4');
  let tcp: Server;
  let port = 0;

  before(async () => {
    await bind(resolver, 0, '127.0.0.1');
    port = resolver.address().port;
    await bind(otherPort, 0, '127.0.0.1');
    await bind(otherAddress, port, '127.0.0.3');
    // Every spoof, each with what a blind attacker might get right, lands before the real answer.
    resolver.on('message', async (message, from) => {
      const id = message.readUInt16BE(0);
      await send(otherPort, reply(id, '198.18.6.6'), from.port, from.address);
      await send(otherAddress, reply(id, '198.18.6.7'), from.port, from.address);
      await send(resolver, reply(id ^ 1, '198.18.6.8'), from.port, from.address);
      await send(resolver, reply(id, '198.18.6.9', { name: 'other.test', type: 'A' }), from.port, from.address);
      await send(resolver, reply(id, '198.18.0.9'), from.port, from.address);
    });
  });
  after(() => {
    for (const socket of [resolver, otherPort, otherAddress]) socket.close();
    tcp?.close();
  });

  it('over UDP takes only the resolver asked, from its port, with the id and question sent', async () => {
    const forwarder = new Forwarder({ servers: ['127.0.0.1'], timeoutMs: 5000, parallel: false, port, clock: new FakeClock() });
    const outcome = await forwarder.forward(query(41), 'udp');
    assert.ok(outcome.ok);
    assert.deepEqual(dataOf(outcome.response), ['198.18.0.9']);
  });

  for (const [name, wrong] of [['id', reply(43, '198.18.6.8')], ['question', reply(42, '198.18.6.9', { name: 'other.test', type: 'A' })]] as const) {
    it(`over TCP refuses an answer with another ${name}`, async () => {
      tcp = createServer((socket) => socket.on('data', () => socket.end(Buffer.concat([Buffer.from([wrong.length >> 8, wrong.length & 255]), wrong]))));
      await new Promise<void>((resolve) => tcp.listen(0, '127.0.0.1', resolve));
      const forwarder = new Forwarder({
        servers: ['127.0.0.1'],
        timeoutMs: 5000,
        parallel: false,
        port: (tcp.address() as { port: number }).port,
        clock: new FakeClock(),
      });
      const outcome = await forwarder.forward(query(42), 'tcp');
      await new Promise((resolve) => tcp.close(resolve));
      assert.equal(outcome.ok, false);
      assert.match(outcome.ok ? '' : outcome.reason, /another id or question/);
    });
  }
});
