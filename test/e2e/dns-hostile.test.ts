/**
 * The DNS proxy of a running agent against hostile clients on the pod
 * network (issue 35): a query with 10,900 questions (it killed the agent
 * over TCP), pipelined queries on a connection that never reads (the agent
 * grew to 433 MB), hundreds of idle connections (they took every fd), 5,000
 * connections trickling a byte a second, and
 * an EDNS0 size of 65535 with a large answer (no answer at all). The agent
 * runs in a network namespace with DNS_PROXY_ADDR on its pod-side address;
 * this process is the client, from the namespace's other end.
 */
import assert from 'node:assert/strict';
import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { once } from 'node:events';
import { readdirSync, readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { describe, it } from 'node:test';
import * as dnsPacket from 'dns-packet';
import { execa } from 'execa';
import { startAgent, type RunningAgent } from '../support/agent.ts';
import { suiteCleanup, tempDir, type Cleanup } from '../support/cleanup.ts';
import { writeNetnsResolvConf } from '../support/dns-netns.ts';
import { makeNetns, netnsSkipReason } from '../support/netns.ts';
import { startPeer } from '../support/peer.ts';
import { manyQuestions, tcpFrame } from '../support/dns-queries.ts';

const skip = await netnsSkipReason();
const dnsPort = 15053;
const statusPort = 15020;
const nameTable = {
  'db.legacy.internal': { ips: ['240.240.0.1'], registry: 'External' },
  // ~96 KB of A records: more than a datagram or a TCP message carries.
  'big.mesh.internal': { ips: Array.from({ length: 6_000 }, (_, at) => `198.18.${at >> 8}.${at & 255}`), registry: 'External' },
};

const query = (id: number, name = 'db.legacy.internal', extra: Partial<dnsPacket.Packet> = {}) =>
  dnsPacket.encode({ id, type: 'query', questions: [{ name, type: 'A' }], ...extra });
const rssBytes = (pid: number) => Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) * 1024;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The first answer over TCP, or undefined when the connection closes or 10 s pass. */
async function askTcp(host: string, message: Buffer): Promise<dnsPacket.Packet | undefined> {
  const socket = connect(dnsPort, host);
  socket.on('error', () => undefined);
  try {
    return await new Promise((resolve) => {
      let data = Buffer.alloc(0);
      socket.on('data', (chunk: Buffer) => {
        data = Buffer.concat([data, chunk]);
        if (data.length >= 2 && data.length >= 2 + data.readUInt16BE(0)) resolve(dnsPacket.decode(data.subarray(2, 2 + data.readUInt16BE(0))));
      });
      socket.on('close', () => resolve(undefined));
      setTimeout(() => resolve(undefined), 10_000);
      socket.write(tcpFrame(message));
    });
  } finally {
    socket.destroy();
  }
}

/** The answer over UDP, and its size, or undefined after 5 s. */
async function askUdp(host: string, message: Buffer): Promise<{ packet: dnsPacket.Packet; bytes: number } | undefined> {
  const socket = createSocket('udp4');
  try {
    return await new Promise((resolve) => {
      socket.on('message', (reply) => resolve({ packet: dnsPacket.decode(reply), bytes: reply.length }));
      setTimeout(() => resolve(undefined), 5_000);
      socket.send(message, dnsPort, host);
    });
  } finally {
    socket.close();
  }
}

const bound = (socket: UdpSocket, port: number, host: string) => new Promise<void>((resolve) => socket.bind(port, host, () => resolve()));
const sent = (socket: UdpSocket, message: Buffer, port: number, host: string) =>
  new Promise<void>((resolve) => socket.send(message, port, host, () => resolve()));

/**
 * The pod's resolver on the namespace's host end, port 53: each query the
 * agent forwards is first met by spoofs (the right id and question from
 * another port; another question from the right address and port), then
 * answered with 198.18.0.9.
 */
async function startSpoofedResolver(cleanup: Cleanup, host: string): Promise<void> {
  const resolver = createSocket('udp4');
  const spoofer = createSocket('udp4');
  cleanup.defer(() => new Promise<void>((resolve) => resolver.close(() => spoofer.close(() => resolve()))));
  await bound(resolver, 53, host);
  await bound(spoofer, 0, host);
  const reply = (id: number, name: string, data: string) =>
    dnsPacket.encode({ id, type: 'response', questions: [{ name, type: 'A' }], answers: [{ type: 'A', name, ttl: 60, data }] });
  resolver.on('message', (message, from) => {
    const query = dnsPacket.decode(message);
    const name = query.questions?.[0]?.name ?? '';
    void (async () => {
      await sent(spoofer, reply(query.id ?? 0, name, '198.18.6.6'), from.port, from.address);
      await sent(resolver, reply(query.id ?? 0, `other-${name}`, '198.18.6.7'), from.port, from.address);
      await sent(resolver, reply(query.id ?? 0, name, '198.18.0.9'), from.port, from.address);
    })();
  });
}

describe('DNS proxy against hostile clients', { skip, timeout: 180_000 }, () => {
  const cleanup = suiteCleanup();
  let agent: RunningAgent;
  let podIp: string;

  const setUp = async () => {
    if (agent) return;
    const netns = await makeNetns('dnsh');
    cleanup.defer(() => netns.remove());
    podIp = /inet ([\d.]+)\//.exec((await execa('ip', ['-n', netns.name, '-4', '-o', 'addr', 'show', 'scope', 'global'])).stdout)![1]!;
    cleanup.defer(await writeNetnsResolvConf(netns.name, netns.hostIp));
    await startSpoofedResolver(cleanup, netns.hostIp);
    const peer = await startPeer([], { address: `${netns.hostIp}:0`, nameTable });
    cleanup.defer(() => peer.stop());
    const dir = await tempDir(cleanup, 'pilot-agent-dnsh-');
    agent = await startAgent({
      discoveryAddress: `${netns.hostIp}:${peer.port}`, wrap: ['ip', 'netns', 'exec', netns.name], dir, cwd: dir,
      args: ['--statusPort', String(statusPort)],
      env: { ISTIO_META_DNS_CAPTURE: 'true', DNS_PROXY_ADDR: `${podIp}:${dnsPort}`, POD_NAMESPACE: 'default' },
    });
    cleanup.defer(async () => void (await agent.stop()));
    // The table comes over NDS a moment after the start.
    for (let tries = 0; tries < 100 && !(await askUdp(podIp, query(1)))?.packet.answers?.length; tries++) await sleep(200);
  };

  it('answers 10,900 questions with FORMERR over TCP and UDP, stays up, and answers the next query', async () => {
    await setUp();
    const tcp = await askTcp(podIp, manyQuestions(2));
    assert.equal((tcp?.flags ?? -1) & 0xf, 1, `FORMERR over TCP: ${JSON.stringify(tcp?.flags)}`);
    const udp = await askUdp(podIp, manyQuestions(3));
    assert.equal((udp?.packet.flags ?? -1) & 0xf, 1, 'FORMERR over UDP');
    const exited = await Promise.race([agent.exited, sleep(500).then(() => undefined)]);
    assert.equal(exited, undefined, `the agent exited: ${agent.stderr()}`);
    assert.deepEqual((await askTcp(podIp, query(4)))?.answers?.map((answer) => ('data' in answer ? answer.data : undefined)), ['240.240.0.1']);
    const metrics = await (await fetch(`http://${podIp}:${statusPort}/stats/prometheus`)).text();
    assert.match(metrics, /^istio_agent_dns_refused_total\{reason="formerr"\} [1-9]/m);
  });

  it('answers an EDNS0 size of 65535 with a large answer within one datagram, truncated', async () => {
    await setUp();
    const answer = await askUdp(
      podIp,
      query(5, 'big.mesh.internal', { additionals: [{ type: 'OPT', name: '.', udpPayloadSize: 65_535 }] as dnsPacket.Packet['additionals'] }),
    );
    assert.ok(answer, 'an answer came');
    assert.ok(answer.bytes <= 65_507, `${answer.bytes} bytes`);
    assert.ok(((answer.packet.flags ?? 0) & dnsPacket.TRUNCATED_RESPONSE) !== 0, 'TC set');
  });

  it('keeps the agent small while a connection pipelines 1,000,000 queries and never reads', async (t) => {
    await setUp();
    const before = rssBytes(agent.pid);
    const socket = connect(dnsPort, podIp);
    socket.on('error', () => undefined);
    socket.pause();
    await once(socket, 'connect');
    const chunk = Buffer.concat(Array.from({ length: 1_000 }, (_, at) => tcpFrame(query(at))));
    for (let sent = 0; sent < 1_000_000; sent += 1_000) socket.write(chunk);
    let peak = before;
    for (let step = 0; step < 40; step++) {
      await sleep(250);
      peak = Math.max(peak, rssBytes(agent.pid));
    }
    socket.destroy();
    t.diagnostic(`agent RSS ${Math.round(before / 1e6)} MB, peak ${Math.round(peak / 1e6)} MB`);
    // Before the fix the agent read and answered them all: 82 MB grew to 433 MB.
    assert.ok(peak - before < 64 * 1024 * 1024, `the agent grew by ${Math.round((peak - before) / 1e6)} MB`);
    assert.deepEqual((await askTcp(podIp, query(6)))?.answers?.length, 1);
  });

  it('answers a new connection while 300 idle ones from the pod network are open, closing the idlest', async () => {
    await setUp();
    const idle: Socket[] = Array.from({ length: 300 }, () => connect(dnsPort, podIp));
    cleanup.defer(() => idle.forEach((socket) => socket.destroy()));
    const closed = idle.map((socket) => (socket.on('error', () => undefined), new Promise<boolean>((resolve) => socket.on('close', () => resolve(true)))));
    for (const socket of idle) socket.write(Buffer.from([0])); // half a length prefix, then nothing
    await sleep(1_000);
    assert.deepEqual((await askTcp(podIp, query(7)))?.answers?.length, 1);
    const gone = await Promise.all(closed.map((done) => Promise.race([done, sleep(2_000).then(() => false)])));
    assert.ok(gone.filter(Boolean).length >= 300 - 128, `${gone.filter(Boolean).length} of 300 idle connections closed`);
    for (const socket of idle) socket.destroy();
  });

  it('answers a new connection while 5,000 pod-network connections trickle a byte a second, and holds a bounded number of descriptors', async (t) => {
    await setUp();
    const fdCount = () => readdirSync(`/proc/${agent.pid}/fd`).length;
    const fdsBefore = fdCount();
    const tricklers: Socket[] = [];
    cleanup.defer(() => tricklers.forEach((socket) => socket.destroy()));
    let closed = 0;
    for (let at = 0; at < 5_000; at += 250) {
      const batch = Array.from({ length: 250 }, () => connect(dnsPort, podIp));
      for (const socket of batch) socket.on('error', () => undefined).on('close', () => closed++);
      await Promise.all(batch.map((socket) => once(socket, 'connect').catch(() => undefined)));
      tricklers.push(...batch);
    }
    // A 65,535-byte message announced, then one byte a second: never a whole query.
    let fdsPeak = 0;
    for (let second = 0; second < 4; second++) {
      const trickle = Buffer.from(second === 0 ? [0xff, 0xff] : [0x41]);
      for (const socket of tricklers) if (!socket.destroyed) socket.write(trickle);
      await sleep(1_000);
      fdsPeak = Math.max(fdsPeak, fdCount());
    }
    assert.deepEqual((await askTcp(podIp, query(9)))?.answers?.length, 1);
    t.diagnostic(`descriptors ${fdsBefore} before, peak ${fdsPeak}; ${closed} of 5,000 trickling connections closed`);
    assert.ok(fdsPeak - fdsBefore <= 128 + 16, `the agent holds ${fdsPeak - fdsBefore} more descriptors`);
    assert.ok(closed >= 5_000 - 128 - 16, `${closed} of 5,000 trickling connections closed`);
    for (const socket of tricklers) socket.destroy();
  });

  it('forwards an unknown name and passes on only the resolver\'s answer, not the spoofs that came first', async () => {
    await setUp();
    const answer = await askUdp(podIp, query(8, 'external.test'));
    assert.deepEqual(answer?.packet.answers?.map((record) => ('data' in record ? record.data : undefined)), ['198.18.0.9']);
  });
});
