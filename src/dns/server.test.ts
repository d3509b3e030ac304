import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createSocket } from 'node:dgram';
import { connect, createServer } from 'node:net';
import { after, before, describe, it } from 'node:test';
import * as dnsPacket from 'dns-packet';
import { Registry } from '../metrics/index.ts';
import { FakeClock } from '../shared/clock.ts';
import { createLogger } from '../shared/log.ts';
import { Forwarder } from './forwarder.ts';
import { LookupTable } from './lookup-table.ts';
import { registerDnsMetrics } from './metrics.ts';
import { DnsServer } from './server.ts';

/** A port free for TCP; UDP on the same number is taken right after. */
const freePort = () => new Promise<number>((resolve) => {
  const probe = createServer().listen(0, '127.0.0.1', () => {
    const { port } = probe.address() as { port: number };
    probe.close(() => resolve(port));
  });
});

function askUdp(port: number, message: Buffer): Promise<Buffer> {
  const socket = createSocket('udp4');
  return new Promise((resolve) => {
    socket.on('message', (reply) => (socket.close(), resolve(reply)));
    socket.send(message, port, '127.0.0.1');
  });
}

const query = (name: string) => dnsPacket.encode({ id: 99, type: 'query', questions: [{ name, type: 'A' }] });

describe('DnsServer with malformed input', () => {
  let server: DnsServer;
  let port: number;
  const table = new LookupTable({ namespace: 'default', domain: '', search: [] });
  table.add('db.legacy.internal', { ips: ['240.240.0.1'], registry: '', shortname: '', namespace: '', altHosts: [] });

  before(async () => {
    port = await freePort();
    server = new DnsServer({
      hosts: ['127.0.0.1'],
      port,
      table: () => table,
      forwarder: new Forwarder({ servers: [], timeoutMs: 1, parallel: false, clock: new FakeClock() }),
      metrics: registerDnsMetrics(new Registry()),
      clock: new FakeClock(),
      logger: createLogger({ level: 'fatal' }),
    });
    await server.start();
  });
  after(() => server.stop());

  it('survives 5,000 random datagrams and still answers', async () => {
    const socket = createSocket('udp4');
    for (let sent = 0; sent < 5_000; sent++) socket.send(randomBytes(1 + (sent % 700)), port, '127.0.0.1');
    await new Promise<void>((resolve) => socket.close(() => resolve()));
    const reply = dnsPacket.decode(await askUdp(port, query('db.legacy.internal')));
    assert.deepEqual(reply.answers?.map((answer) => ('data' in answer ? answer.data : undefined)), ['240.240.0.1']);
  });

  it('answers garbage over TCP with FORMERR or closes, and answers the next good query on a new connection', async () => {
    const socket = connect(port, '127.0.0.1');
    const garbage = Buffer.concat([Buffer.from([0x12, 0x34, 0x01, 0x00, 0x00, 0x09]), randomBytes(30)]);
    const length = Buffer.alloc(2);
    length.writeUInt16BE(garbage.length);
    const got = await new Promise<Buffer>((resolve) => {
      let data = Buffer.alloc(0);
      socket.on('data', (chunk) => (data = Buffer.concat([data, chunk])));
      socket.on('close', () => resolve(data));
      socket.on('error', () => undefined);
      socket.write(Buffer.concat([length, garbage]));
      setImmediate(() => socket.end());
    });
    if (got.length > 0) assert.equal(dnsPacket.decode(got.subarray(2)).flags! & 0xf, 1, 'FORMERR');
    const reply = dnsPacket.decode(await askUdp(port, query('db.legacy.internal')));
    assert.equal(reply.answers?.length, 1);
  });

  it('answers queries pipelined on one TCP connection, split anywhere', async () => {
    const framed = [1, 2, 3].map(() => {
      const message = query('db.legacy.internal');
      const length = Buffer.alloc(2);
      length.writeUInt16BE(message.length);
      return Buffer.concat([length, message]);
    });
    const all = Buffer.concat(framed);
    const socket = connect(port, '127.0.0.1');
    const replies = await new Promise<number>((resolve) => {
      let data = Buffer.alloc(0);
      socket.on('data', (chunk) => {
        data = Buffer.concat([data, chunk]);
        let count = 0;
        for (let at = 0; at + 2 <= data.length && at + 2 + data.readUInt16BE(at) <= data.length; at += 2 + data.readUInt16BE(at)) count++;
        if (count === 3) (socket.destroy(), resolve(count));
      });
      socket.write(all.subarray(0, 5));
      setImmediate(() => socket.write(all.subarray(5)));
    });
    assert.equal(replies, 3);
  });
});
