import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createSocket } from 'node:dgram';
import { connect, createServer, type Socket } from 'node:net';
import { afterEach, beforeEach, describe, it } from 'node:test';
import * as dnsPacket from 'dns-packet';
import { pino } from 'pino';
import { Counter, Registry } from '../metrics/index.ts';
import { FakeClock } from '../shared/clock.ts';
import type { Forwarded, Forwarder } from './forwarder.ts';
import { LookupTable } from './lookup-table.ts';
import { registerDnsMetrics, type DnsMetrics } from './metrics.ts';
import { DnsServer, type DnsServerOptions } from './server.ts';
import { tcpFrame } from '../../test/support/dns-queries.ts';

const freePort = () => new Promise<number>((resolve) => {
  const probe = createServer().listen(0, '127.0.0.1', () => {
    const { port } = probe.address() as { port: number };
    probe.close(() => resolve(port));
  });
});

const query = (name: string, id = 7) => dnsPacket.encode({ id, type: 'query', flags: dnsPacket.RECURSION_DESIRED, questions: [{ name, type: 'A' }] });

/** What the resolver "answered": the query's id with one address. */
const resolverAnswer = (message: Buffer) =>
  dnsPacket.encode({ ...dnsPacket.decode(message), type: 'response', answers: [{ type: 'A', name: 'example.org', ttl: 5, data: '203.0.113.9' }] });

/** Until `done()` holds, turning the event loop (bounded: no wall-clock wait). */
async function until(done: () => boolean | Promise<boolean>): Promise<void> {
  for (let turn = 0; turn < 2_000 && !(await done()); turn++) await new Promise((resolve) => setImmediate(resolve));
  assert.ok(await done(), 'condition never held');
}

interface Harness {
  server: DnsServer;
  port: number;
  metrics: DnsMetrics;
  refused: Counter<'reason'>;
  lines: Record<string, unknown>[];
  asked: Buffer[];
  clock: FakeClock;
}

describe('DnsServer forwarding and faults', () => {
  let harness: Harness;
  let reply: (message: Buffer) => Promise<Forwarded>;
  const sockets: Socket[] = [];
  const datagramSockets: ReturnType<typeof createSocket>[] = [];
  const table = new LookupTable({ namespace: 'default', domain: '', search: [] });
  table.add('db.legacy.internal', { ips: ['240.240.0.1'], registry: '', shortname: '', namespace: '', altHosts: [] });
  table.add('headless.mesh', { ips: ['198.18.7.1', '198.18.7.2', '198.18.7.3'], registry: '', shortname: '', namespace: '', altHosts: [] });

  async function start(overrides: Partial<DnsServerOptions> = {}): Promise<Harness> {
    const registry = new Registry();
    const lines: Record<string, unknown>[] = [];
    const asked: Buffer[] = [];
    const clock = new FakeClock(1_000);
    const forwarder = { forward: (message: Buffer) => (asked.push(message), reply(message)) } as unknown as Forwarder;
    const options: DnsServerOptions = {
      hosts: ['127.0.0.1'],
      port: await freePort(),
      table: () => table,
      forwarder,
      metrics: registerDnsMetrics(registry),
      refused: new Counter({ name: 'refused_total', help: 'h', labelNames: ['reason'], registers: [registry] }),
      clock,
      logger: pino({ level: 'debug' }, { write: (line: string) => void lines.push(JSON.parse(line)) }),
      ...overrides,
    };
    const server = new DnsServer(options);
    await server.start();
    return { server, port: options.port, metrics: options.metrics, refused: options.refused!, lines, asked, clock };
  }

  beforeEach(async () => {
    reply = async (message) => ({ ok: true, response: resolverAnswer(message), server: '192.0.2.53' });
    harness = await start();
  });
  afterEach(async () => {
    for (const socket of sockets.splice(0)) socket.destroy();
    for (const socket of datagramSockets.splice(0)) socket.close();
    await harness.server.stop();
  });

  const value = async (metric: { get(): Promise<{ values: { value: number; metricName?: string }[] }> }, name?: string) =>
    (await metric.get()).values.filter((sample) => !name || sample.metricName === name).reduce((sum, sample) => sum + sample.value, 0);
  const refusals = async () => Object.fromEntries((await harness.refused.get()).values.map((sample) => [sample.labels.reason, sample.value]));

  /** Sends one datagram from a socket of its own (closed after the test). */
  function sendUdp(message: Buffer) {
    const socket = createSocket('udp4');
    datagramSockets.push(socket);
    socket.send(message, harness.port, '127.0.0.1');
    return socket;
  }

  function askUdp(message: Buffer): Promise<dnsPacket.Packet> {
    return new Promise((resolve) => void sendUdp(message).once('message', (answer) => resolve(dnsPacket.decode(answer))));
  }

  /** A TCP connection to the server, with every whole answer it receives and whether it closed. */
  async function openTcp() {
    const socket = connect(harness.port, '127.0.0.1');
    sockets.push(socket);
    const seen = { answers: [] as dnsPacket.Packet[], closed: false };
    let data = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      data = Buffer.concat([data, chunk]);
      while (data.length >= 2 && data.length >= 2 + data.readUInt16BE(0)) {
        seen.answers.push(dnsPacket.decode(data.subarray(2, 2 + data.readUInt16BE(0))));
        data = data.subarray(2 + data.readUInt16BE(0));
      }
    });
    socket.on('close', () => (seen.closed = true));
    socket.on('error', () => undefined);
    await once(socket, 'connect');
    return { socket, seen };
  }

  it('forwards a name the table does not know, returns the resolver answer and counts and times it', async () => {
    reply = async (message) => (harness.clock.advance(250), { ok: true, response: resolverAnswer(message), server: '192.0.2.53' });
    const answer = await askUdp(query('example.org', 41));
    assert.equal(answer.id, 41);
    assert.deepEqual(answer.answers?.map((record) => ('data' in record ? record.data : undefined)), ['203.0.113.9']);
    assert.equal(harness.asked.length, 1);
    assert.equal(await value(harness.metrics.requests), 1);
    assert.equal(await value(harness.metrics.upstreamRequests), 1);
    assert.equal(await value(harness.metrics.upstreamFailures), 0);
    assert.equal(await value(harness.metrics.upstreamDuration, 'istio_agent_dns_upstream_request_duration_seconds_sum'), 0.25);
    assert.deepEqual(await refusals(), {}, 'a sent answer is no refusal');
  });

  it('starts the addresses of a headless service one further with each query', async () => {
    const firsts: unknown[] = [];
    for (let id = 0; id < 4; id++) firsts.push((await askUdp(query('headless.mesh', id))).answers?.map((record) => ('data' in record ? record.data : ''))[0]);
    assert.deepEqual(firsts, ['198.18.7.1', '198.18.7.2', '198.18.7.3', '198.18.7.1']);
  });

  it('answers SERVFAIL when no resolver answered, counts the failure and logs why at debug', async () => {
    reply = async () => ({ ok: false, reason: 'no nameserver in resolv.conf' });
    const answer = await askUdp(query('example.org', 42));
    assert.equal(answer.id, 42);
    assert.equal((answer.flags ?? 0) & 0xf, 2, 'SERVFAIL');
    assert.equal(await value(harness.metrics.upstreamFailures), 1);
    const line = harness.lines.find((each) => each.msg === 'no resolver answered; SERVFAIL');
    assert.deepEqual([line?.level, line?.name, line?.protocol, line?.reason], [20, 'example.org', 'udp', 'no nameserver in resolv.conf']);
  });

  it('over TCP, a SERVFAIL says the protocol was tcp', async () => {
    reply = async () => ({ ok: false, reason: 'timed out' });
    const { socket, seen } = await openTcp();
    socket.write(tcpFrame(query('example.org', 43)));
    await until(() => seen.answers.length === 1);
    assert.equal((seen.answers[0]!.flags ?? 0) & 0xf, 2, 'SERVFAIL');
    assert.equal(harness.lines.find((each) => each.msg === 'no resolver answered; SERVFAIL')?.protocol, 'tcp');
  });

  it('counts FORMERR and NOTIMP answers as refused, and nothing for a good answer', async () => {
    const notimp = query('db.legacy.internal', 44);
    notimp[2] = notimp[2]! | (2 << 3); // opcode STATUS
    assert.equal(((await askUdp(notimp)).flags ?? 0) & 0xf, 4, 'NOTIMP');
    const formerr = query('db.legacy.internal', 45);
    formerr.writeUInt16BE(2, 4); // two questions
    assert.equal(((await askUdp(formerr)).flags ?? 0) & 0xf, 1, 'FORMERR');
    assert.equal((await askUdp(query('db.legacy.internal', 46))).answers?.length, 1);
    assert.deepEqual(await refusals(), { notimp: 1, formerr: 1 });
  });

  it('drops a query the forwarder fails on: no answer, a fault counted and logged at debug', async () => {
    reply = async () => Promise.reject(new Error('forwarder broke'));
    sendUdp(query('example.org', 47));
    await until(async () => (await refusals()).fault === 1);
    const line = harness.lines.find((each) => each.msg === 'DNS query dropped');
    assert.deepEqual([line?.level, line?.reason, (line?.err as { message?: string })?.message], [20, 'fault', 'forwarder broke']);
    assert.equal(harness.lines.filter((each) => each.level === 40).length, 0, 'never a warning per packet');
  });

  it('counts a fault when the table cannot be read, and keeps answering', async () => {
    await harness.server.stop();
    let broken = true;
    harness = await start({ table: () => (broken ? assert.fail('table broke') : table) });
    sendUdp(query('db.legacy.internal'));
    await until(async () => (await refusals()).fault === 1);
    broken = false;
    assert.equal((await askUdp(query('db.legacy.internal'))).answers?.length, 1);
  });

  it('counts a fault when even counting the request fails, and stays up', async () => {
    await harness.server.stop();
    const metrics = registerDnsMetrics(new Registry());
    let broken = true;
    const inc = metrics.requests.inc.bind(metrics.requests);
    metrics.requests.inc = () => (broken ? assert.fail('counter broke') : inc());
    harness = await start({ metrics });
    sendUdp(query('db.legacy.internal'));
    await until(async () => (await refusals()).fault === 1);
    broken = false;
    assert.equal((await askUdp(query('db.legacy.internal'))).answers?.length, 1);
  });

  it('counts a send failure when a forwarded answer does not fit a datagram', async () => {
    reply = async () => ({ ok: true, response: Buffer.alloc(70_000), server: '192.0.2.53' });
    sendUdp(query('example.org'));
    await until(async () => (await refusals()).send === 1);
    assert.equal(harness.lines.find((each) => each.msg === 'DNS query dropped')?.reason, 'send');
  });

  it('over TCP, an answer too large to frame is a fault that closes the connection', async () => {
    reply = async () => ({ ok: true, response: Buffer.alloc(70_000), server: '192.0.2.53' });
    const { socket, seen } = await openTcp();
    socket.write(tcpFrame(query('example.org')));
    await until(() => seen.closed);
    assert.deepEqual(await refusals(), { fault: 1 });
  });

  it('counts a fault when the server stopped before a forwarded answer came back', async () => {
    let answer: (outcome: Forwarded) => void = () => undefined;
    reply = () => new Promise((resolve) => (answer = resolve));
    sendUdp(query('example.org'));
    await until(() => harness.asked.length === 1);
    await harness.server.stop();
    answer({ ok: true, response: resolverAnswer(harness.asked[0]!), server: '192.0.2.53' });
    await until(async () => (await refusals()).fault === 1);
  });
  it('stop closes the open TCP connections', async () => {
    const { socket, seen } = await openTcp();
    socket.write(tcpFrame(query('db.legacy.internal')));
    await until(() => seen.answers.length === 1);
    const stopped = harness.server.stop();
    await until(() => seen.closed);
    await stopped;
  });

  it('never closes a connection waiting on a forwarded answer for a newcomer, and closes one that went idle', async () => {
    await harness.server.stop();
    harness = await start({ connectionLimits: { max: 1, reservedForTrusted: 0, idleMs: 60_000 } });
    let answer: (outcome: Forwarded) => void = () => undefined;
    reply = () => new Promise((resolve) => (answer = resolve));
    const waiting = await openTcp();
    waiting.socket.write(tcpFrame(query('example.org', 51)));
    await until(() => harness.asked.length === 1);
    const refused = await openTcp();
    await until(() => refused.seen.closed);
    answer({ ok: true, response: resolverAnswer(harness.asked[0]!), server: '192.0.2.53' });
    await until(() => waiting.seen.answers.length === 1);
    assert.equal(waiting.seen.answers[0]!.id, 51);
    const newcomer = await openTcp();
    await until(() => waiting.seen.closed);
    newcomer.socket.write(tcpFrame(query('db.legacy.internal', 52)));
    await until(() => newcomer.seen.answers.length === 1);
    assert.equal(newcomer.seen.answers[0]!.answers?.length, 1);
  });

  it('start rejects when the port is taken, leaving nothing bound', async () => {
    await harness.server.stop();
    const port = await freePort();
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(port, '127.0.0.1', resolve));
    try {
      await assert.rejects(start({ port }), { code: 'EADDRINUSE' });
      const udp = createSocket('udp4');
      await new Promise<void>((resolve, reject) => (udp.once('error', reject), udp.bind(port, '127.0.0.1', resolve)));
      await new Promise<void>((resolve) => udp.close(() => resolve()));
    } finally {
      await new Promise((resolve) => taken.close(resolve));
      harness = await start();
    }
  });
});
