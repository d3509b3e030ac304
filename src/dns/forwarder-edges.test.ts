import assert from 'node:assert/strict';
import { createServer, type Server, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import * as dnsPacket from 'dns-packet';
import { FakeClock } from '../shared/clock.ts';
import { Forwarder } from './forwarder.ts';

const query = (id: number) => dnsPacket.encode({ id, type: 'query', questions: [{ name: 'external.test', type: 'A' }] });
const reply = (id: number) =>
  dnsPacket.encode({
    id,
    type: 'response',
    questions: [{ name: 'external.test', type: 'A' }],
    answers: [{ type: 'A', name: 'external.test', ttl: 60, data: '198.18.0.9' }],
  });
const framed = (message: Buffer) => Buffer.concat([Buffer.from([message.length >> 8, message.length & 0xff]), message]);

/** Advances the fake clock until `pending` settles (the timeout is armed once the socket is up); fails by name instead of hanging. */
async function advanceUntil<T>(clock: FakeClock, ms: number, pending: Promise<T>): Promise<T> {
  let settled = false;
  void pending.then(() => (settled = true), () => (settled = true));
  for (let step = 0; step < 50 && !settled; step++) {
    clock.advance(ms);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  if (!settled) throw new Error(`still pending after 50 advances of ${ms} ms`);
  return pending;
}

/** A TCP resolver on 127.0.0.1 that does `behave` with each connection's first query id. */
async function tcpResolver(behave: (socket: Socket, id: number) => void): Promise<{ server: Server; port: number }> {
  const server = createServer((socket) => socket.once('data', (chunk: Buffer) => behave(socket, chunk.readUInt16BE(2))));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as { port: number }).port };
}

describe('Forwarder: what each failure says, and TCP answers in pieces', () => {
  const servers: Server[] = [];
  const resolver = async (behave: (socket: Socket, id: number) => void) => {
    const started = await tcpResolver(behave);
    servers.push(started.server);
    return started.port;
  };
  let port = 0;
  before(async () => {
    port = await resolver(() => undefined); // a free port for the silent UDP resolvers
  });
  after(() => servers.forEach((server) => server.close()));

  it('joins every resolver\'s reason, in the order tried (sequential) or given (parallel), IPv6 in brackets', async () => {
    for (const parallel of [false, true]) {
      const clock = new FakeClock();
      const forwarder = new Forwarder({ servers: ['127.0.0.2', '::1'], timeoutMs: 700, parallel, port, clock });
      const outcome = await advanceUntil(clock, 700, forwarder.forward(query(1), 'udp'));
      assert.deepEqual(
        outcome,
        { ok: false, reason: `127.0.0.2:${port}: no answer within 700 ms; [::1]:${port}: no answer within 700 ms` },
        `parallel ${parallel}`,
      );
    }
  });

  it('starts each sequential query at the next resolver', async () => {
    const clock = new FakeClock();
    const forwarder = new Forwarder({ servers: ['127.0.0.2', '127.0.0.3', '127.0.0.4'], timeoutMs: 700, parallel: false, port, clock });
    const firsts: string[] = [];
    for (let at = 0; at < 4; at++) {
      const outcome = await advanceUntil(clock, 700, forwarder.forward(query(at), 'udp'));
      firsts.push(outcome.ok ? '' : outcome.reason.split(':')[0]!);
    }
    assert.deepEqual(firsts, ['127.0.0.2', '127.0.0.3', '127.0.0.4', '127.0.0.2']);
  });

  it('takes a TCP answer that arrives a byte at a time', async () => {
    const tcpPort = await resolver((socket, id) => {
      const bytes = framed(reply(id));
      const send = (at: number) => (at < bytes.length ? socket.write(bytes.subarray(at, at + 1), () => setImmediate(() => send(at + 1))) : socket.end());
      send(0);
    });
    const outcome = await new Forwarder({ servers: ['127.0.0.1'], timeoutMs: 5000, parallel: false, port: tcpPort, clock: new FakeClock() }).forward(
      query(21),
      'tcp',
    );
    assert.ok(outcome.ok && dnsPacket.decode(outcome.response).id === 21 && outcome.response.length === reply(21).length);
  });

  const tcpFailures: [string, (socket: Socket, id: number) => void, string][] = [
    ['closes without answering', (socket) => socket.end(), 'closed before answering'],
    ['answers another id first', (socket, id) => socket.end(framed(reply(id ^ 1))), 'answered another id or question'],
    ['sends half a length, then closes', (socket) => socket.end(Buffer.from([0])), 'closed before answering'],
  ];
  for (const [name, behave, reason] of tcpFailures) {
    it(`over TCP, a resolver that ${name}: "${reason}"`, async () => {
      const tcpPort = await resolver(behave);
      const outcome = await new Forwarder({ servers: ['127.0.0.1'], timeoutMs: 5000, parallel: false, port: tcpPort, clock: new FakeClock() }).forward(
        query(22),
        'tcp',
      );
      assert.deepEqual(outcome, { ok: false, reason: `127.0.0.1:${tcpPort}: ${reason}` });
    });
  }
});
