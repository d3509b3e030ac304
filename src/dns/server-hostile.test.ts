import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect, createServer, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import * as dnsPacket from 'dns-packet';
import { Counter, Registry } from '../metrics/index.ts';
import { FakeClock } from '../shared/clock.ts';
import { createLogger } from '../shared/log.ts';
import { Forwarder } from './forwarder.ts';
import { LookupTable } from './lookup-table.ts';
import { registerDnsMetrics } from './metrics.ts';
import { DnsServer } from './server.ts';
import { manyQuestions, tcpFrame } from '../../test/support/dns-queries.ts';

const freePort = () => new Promise<number>((resolve) => {
  const probe = createServer().listen(0, '127.0.0.1', () => {
    const { port } = probe.address() as { port: number };
    probe.close(() => resolve(port));
  });
});

const query = (id: number) => dnsPacket.encode({ id, type: 'query', questions: [{ name: 'db.legacy.internal', type: 'A' }] });

/** The first whole answer on `socket`, or undefined when it closes first. */
function firstAnswer(socket: Socket): Promise<dnsPacket.Packet | undefined> {
  return new Promise((resolve) => {
    let data = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      data = Buffer.concat([data, chunk]);
      if (data.length >= 2 && data.length >= 2 + data.readUInt16BE(0)) resolve(dnsPacket.decode(data.subarray(2, 2 + data.readUInt16BE(0))));
    });
    socket.on('close', () => resolve(undefined));
    socket.on('error', () => undefined);
  });
}

async function ask(port: number, message: Buffer): Promise<dnsPacket.Packet | undefined> {
  const socket = connect(port, '127.0.0.1');
  const answer = firstAnswer(socket);
  socket.write(tcpFrame(message));
  try {
    return await answer;
  } finally {
    socket.destroy();
  }
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('DnsServer over TCP against hostile clients', () => {
  let server: DnsServer;
  let port: number;
  const registry = new Registry();
  const metrics = registerDnsMetrics(registry);
  const refused = new Counter({ name: 'refused_total', help: 'h', labelNames: ['reason'], registers: [registry] });
  const table = new LookupTable({ namespace: 'default', domain: '', search: [] });
  table.add('db.legacy.internal', { ips: ['240.240.0.1'], registry: '', shortname: '', namespace: '', altHosts: [] });
  const sockets: Socket[] = [];

  before(async () => {
    port = await freePort();
    const forwarder = new Forwarder({ servers: [], timeoutMs: 1, parallel: false, clock: new FakeClock() });
    server = new DnsServer({
      hosts: ['127.0.0.1'],
      port,
      table: () => table,
      forwarder,
      metrics,
      refused,
      connectionLimits: { max: 4, reservedForTrusted: 2, idleMs: 60_000 },
      clock: new FakeClock(),
      logger: createLogger({ level: 'fatal' }),
    });
    await server.start();
  });
  after(async () => {
    for (const socket of sockets) socket.destroy();
    await server.stop();
  });

  it('answers 10,900 questions with FORMERR, stays up and answers the next query', async () => {
    const message = manyQuestions(11);
    assert.ok(message.length <= 65_535, `${message.length} bytes`);
    const answer = await ask(port, message);
    assert.equal((answer?.flags ?? 0) & 0xf, 1, 'FORMERR');
    assert.deepEqual(answer?.questions, []);
    const next = await ask(port, query(12));
    assert.deepEqual(next?.answers?.map((record) => ('data' in record ? record.data : undefined)), ['240.240.0.1']);
    assert.ok((await refused.get()).values.some((sample) => sample.labels.reason === 'formerr' && sample.value >= 1));
  });

  it('stops reading a connection that pipelines 400,000 queries and never reads the answers', async () => {
    const before = await requestsSeen();
    const socket = connect(port, '127.0.0.1');
    sockets.push(socket);
    socket.on('error', () => undefined);
    socket.pause(); // never reads
    await once(socket, 'connect');
    const one = tcpFrame(query(13));
    const total = 400_000;
    const chunk = Buffer.concat(Array.from({ length: 400 }, () => one));
    for (let sent = 0; sent < total; sent += 400) socket.write(chunk);
    // Wait until the server has stopped taking queries (no change for a while), bounded in steps.
    let seen = -1;
    for (let step = 0; step < 100 && seen !== (await requestsSeen()); step++) {
      seen = await requestsSeen();
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const handled = (await requestsSeen()) - before;
    // ~50-byte answers: the kernel's buffers on both sides hold some MB of them; the rest stays unread in the client.
    assert.ok(handled < total / 2, `${handled} of ${total} queries answered into a connection that never reads`);
    socket.destroy();
  });

  it('keeps at most max + reserve connections: idle ones are closed for newcomers, and a new query is answered', async () => {
    const idle = Array.from({ length: 30 }, () => connect(port, '127.0.0.1'));
    sockets.push(...idle);
    const closed = idle.map((socket) => (socket.on('error', () => undefined), new Promise<boolean>((resolve) => socket.on('close', () => resolve(true)))));
    await Promise.all(idle.map((socket) => once(socket, 'connect').catch(() => undefined)));
    for (const socket of idle) socket.write(Buffer.from([0])); // half a length: a trickle
    await settle();
    const answer = await ask(port, query(14));
    assert.equal(answer?.answers?.length, 1);
    const open = await Promise.all(closed.map((done) => Promise.race([done, new Promise((resolve) => setTimeout(() => resolve(false), 1_000))])));
    assert.ok(open.filter((gone) => !gone).length <= 6, `${open.filter((gone) => !gone).length} of 30 idle connections still open`);
  });

  async function requestsSeen(): Promise<number> {
    return (await metrics.requests.get()).values.reduce((sum, sample) => sum + sample.value, 0);
  }
});
