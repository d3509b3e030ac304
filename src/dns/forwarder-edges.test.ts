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
    ['sends an empty message, then closes', (socket) => socket.end(Buffer.from([0, 0])), 'answered another id or question'],
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
  const tcpForwarder = (tcpPort: number, clock = new FakeClock()) =>
    new Forwarder({ servers: ['127.0.0.1'], timeoutMs: 5000, parallel: false, port: tcpPort, clock });

  it('over TCP, sends the query behind its length, closes the connection once answered and leaves no timer armed', async () => {
    const closed: Promise<void>[] = [];
    const tcpPort = await resolver((socket, id) => {
      closed.push(new Promise((resolve) => socket.on('close', () => resolve())));
      socket.on('error', () => undefined);
      socket.write(framed(reply(id))); // and keeps the connection open
    });
    const clock = new FakeClock();
    const outcome = await tcpForwarder(tcpPort, clock).forward(query(23), 'tcp');
    assert.equal(outcome.ok, true);
    assert.equal(clock.pending, 0);
    await closed[0];
  });

  it('over TCP, a resolver reads the query as one framed message', async () => {
    const framedRight: boolean[] = [];
    const tcpPort = await resolver((socket, id) => {
      socket.on('error', () => undefined);
      socket.end(framed(reply(id)));
    });
    const server = servers.at(-1)!;
    server.prependListener('connection', (socket: Socket) =>
      socket.once('data', (chunk: Buffer) => framedRight.push(chunk.length >= 2 && chunk.readUInt16BE(0) === chunk.length - 2)),
    );
    assert.equal((await tcpForwarder(tcpPort).forward(query(24), 'tcp')).ok, true);
    assert.deepEqual(framedRight, [true]);
  });

  it('over TCP, a refused connection says why', async () => {
    const closedPort = await resolver(() => undefined);
    await new Promise((resolve) => servers.pop()!.close(resolve));
    const outcome = await tcpForwarder(closedPort).forward(query(25), 'tcp');
    assert.deepEqual(outcome, { ok: false, reason: `127.0.0.1:${closedPort}: connect ECONNREFUSED 127.0.0.1:${closedPort}` });
  });

  it('over UDP, a resolver the socket cannot send to says why at once', async () => {
    const clock = new FakeClock();
    // No resolver is named so, but a name that cannot be looked up is the socket error that can be made on demand.
    const forwarder = new Forwarder({ servers: ['a..b'], timeoutMs: 700, parallel: false, port, clock });
    const outcome = await forwarder.forward(query(26), 'udp');
    assert.deepEqual(outcome, { ok: false, reason: `a..b:${port}: getaddrinfo ENOTFOUND a..b` });
    assert.equal(clock.pending, 0);
  });
});
