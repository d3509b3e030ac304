import assert from 'node:assert/strict';
import { createSocket, type Socket } from 'node:dgram';
import { createServer, type Server } from 'node:net';
import { after, afterEach, before, describe, it } from 'node:test';
import * as dnsPacket from 'dns-packet';
import { FakeClock } from '../shared/clock.ts';
import type { Protocol } from './answer.ts';
import { Forwarder, type Forwarded, type ForwarderOptions } from './forwarder.ts';

const query = (id: number) => dnsPacket.encode({ id, type: 'query', flags: dnsPacket.RECURSION_DESIRED, questions: [{ name: 'external.test', type: 'A' }] });
const reply = (message: Buffer) =>
  dnsPacket.encode({
    id: dnsPacket.decode(message).id,
    type: 'response',
    questions: dnsPacket.decode(message).questions,
    answers: [{ type: 'A', name: 'external.test', ttl: 60, data: '198.51.100.7' }],
  });
const bind = (socket: Socket, port: number, host: string) => new Promise<void>((resolve) => socket.bind(port, host, resolve));

/**
 * Advances the fake clock until `pending` settles: the forwarder arms its
 * timeout only once its socket is up, which a loaded machine may make later
 * than the call. Fails by name after `steps` advances instead of hanging.
 */
async function advanceUntil<T>(clock: FakeClock, ms: number, pending: Promise<T>, steps = 50): Promise<T> {
  let settled = false;
  void pending.then(() => (settled = true), () => (settled = true));
  for (let step = 0; step < steps && !settled; step++) {
    clock.advance(ms);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  if (!settled) throw new Error(`still pending after ${steps} advances of ${ms} ms`);
  return pending;
}

/** Waits (a bounded number of turns) until the forwarder has armed a timer on the fake clock. */
async function timerArmed(clock: FakeClock, turns = 500): Promise<void> {
  for (let turn = 0; turn < turns && clock.pending === 0; turn++) await new Promise((resolve) => setTimeout(resolve, 10));
  if (clock.pending === 0) throw new Error(`no timer armed after ${turns} turns`);
}

/** Every forward started here and the fake clock its timeouts run on. */
const outstanding: { clock: FakeClock; pending: Promise<Forwarded> }[] = [];

/** A Forwarder whose forwards are kept in `outstanding`, for afterEach to end. */
class TrackedForwarder extends Forwarder {
  readonly #clock: FakeClock;

  constructor(options: ForwarderOptions & { clock: FakeClock }) {
    super(options);
    this.#clock = options.clock;
  }

  override forward(query: Buffer, protocol: Protocol): Promise<Forwarded> {
    const pending = super.forward(query, protocol);
    outstanding.push({ clock: this.#clock, pending });
    return pending;
  }
}

describe('Forwarder', () => {
  // 127.0.0.1 answers (UDP and TCP); 127.0.0.2, on the same port, never does.
  const answering = createSocket('udp4');
  const silent = createSocket('udp4');
  let tcp: Server;
  let port = 0;

  before(async () => {
    answering.on('message', (message, from) => answering.send(reply(message), from.port, from.address));
    await bind(answering, 0, '127.0.0.1');
    port = answering.address().port;
    await bind(silent, port, '127.0.0.2');
    tcp = createServer((socket) => socket.on('data', (chunk) => {
      const response = reply(chunk.subarray(2));
      const length = Buffer.alloc(2);
      length.writeUInt16BE(response.length);
      socket.end(Buffer.concat([length, response]));
    }));
    await new Promise<void>((resolve) => tcp.listen(port, '127.0.0.1', resolve));
  });
  // A failed assertion leaves forwards waiting on the fake clock, each holding a socket that keeps the
  // file's process alive: every one is run past its timeouts, then the resolvers close.
  afterEach(async () => {
    for (const { clock, pending } of outstanding.splice(0)) await advanceUntil(clock, 60_000, pending, 500);
  });
  after(async () => {
    answering.close();
    silent.close();
    await new Promise((resolve) => (tcp ? tcp.close(resolve) : resolve(undefined)));
  });

  it('a resolver that does not answer costs only the queries sent to it: the others are answered meanwhile', async () => {
    const clock = new FakeClock();
    const forwarder = new TrackedForwarder({ servers: ['127.0.0.2', '127.0.0.1'], timeoutMs: 5000, parallel: false, port, clock });
    let firstDone = false;
    const first = forwarder.forward(query(1), 'udp').then((outcome) => ((firstDone = true), outcome));
    const second = await forwarder.forward(query(2), 'udp');
    assert.ok(second.ok && second.server === '127.0.0.1');
    assert.equal(dnsPacket.decode(second.response).id, 2, 'the resolver\'s answer, as is');
    assert.equal(firstDone, false, 'the query sent to the silent resolver still waits');
    // Fire the silent resolver's timeout once, then leave the clock alone: advancing on would also
    // time out the next resolver before its real answer arrives on a loaded machine.
    await timerArmed(clock);
    clock.advance(5000);
    const outcome = await first;
    assert.ok(outcome.ok && outcome.server === '127.0.0.1', 'after the timeout the next resolver answers it');
  });

  it('in parallel, the first answer wins without waiting for the silent resolver', async () => {
    const forwarder = new TrackedForwarder({ servers: ['127.0.0.2', '127.0.0.1'], timeoutMs: 5000, parallel: true, port, clock: new FakeClock() });
    const outcome = await forwarder.forward(query(3), 'udp');
    assert.ok(outcome.ok && outcome.server === '127.0.0.1');
  });

  it('says why when no resolver answers', async () => {
    const clock = new FakeClock();
    const forwarder = new TrackedForwarder({ servers: ['127.0.0.2'], timeoutMs: 5000, parallel: false, port, clock });
    const pending = forwarder.forward(query(4), 'udp');
    assert.deepEqual(await advanceUntil(clock, 5000, pending), { ok: false, reason: `127.0.0.2:${port}: no answer within 5000 ms` });
    assert.deepEqual(await new TrackedForwarder({ servers: [], timeoutMs: 1, parallel: false, clock }).forward(query(5), 'udp'), {
      ok: false,
      reason: 'no nameserver in resolv.conf',
    });
  });

  it('caps the queries waiting on resolvers: past the cap, a failure at once instead of another socket', async () => {
    const clock = new FakeClock();
    const forwarder = new TrackedForwarder({ servers: ['127.0.0.2'], timeoutMs: 5000, parallel: false, port, clock, maxInFlight: 2 });
    const waiting = [forwarder.forward(query(7), 'udp'), forwarder.forward(query(8), 'udp')];
    assert.deepEqual(await forwarder.forward(query(9), 'udp'), { ok: false, reason: '2 queries already forwarded and waiting' });
    await advanceUntil(clock, 5000, Promise.all(waiting));
    const again = await advanceUntil(clock, 5000, forwarder.forward(query(10), 'udp'));
    assert.match(again.ok ? '' : again.reason, /no answer within/, 'room again once they ended');
  });

  it('forwards a TCP query over TCP', async () => {
    const forwarder = new TrackedForwarder({ servers: ['127.0.0.1'], timeoutMs: 5000, parallel: false, port, clock: new FakeClock() });
    const outcome = await forwarder.forward(query(6), 'tcp');
    assert.ok(outcome.ok);
    assert.equal(dnsPacket.decode(outcome.response).answers?.length, 1);
  });
});
