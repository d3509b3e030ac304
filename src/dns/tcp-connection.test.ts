import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { test } from 'node:test';
import * as dnsPacket from 'dns-packet';
import { ConnectionCap } from '../shared/connection-cap.ts';
import { serveTcpConnection, tcpConnectionLimits, type Answerer } from './tcp-connection.ts';

function framed(id: number): Buffer {
  const message = dnsPacket.encode({ id, type: 'query', questions: [{ name: 'a.example', type: 'A' }] });
  const length = Buffer.alloc(2);
  length.writeUInt16BE(message.length);
  return Buffer.concat([length, message]);
}

async function listen(answer: Answerer): Promise<{ server: Server; port: number; cap: ConnectionCap }> {
  const cap = new ConnectionCap({ max: 4, reservedForTrusted: 0, idleMs: 60_000, trusted: () => false });
  const server = createServer((socket) => cap.admit(socket) && serveTcpConnection(socket, answer, cap));
  cap.attach(server, false);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { server, port: (server.address() as { port: number }).port, cap };
}

/** Counts whole framed answers as they arrive; resolves once `want` have. */
function countAnswers(socket: Socket, want: number): Promise<number> {
  let data = Buffer.alloc(0);
  let count = 0;
  return new Promise((resolve) => {
    socket.on('data', (chunk: Buffer) => {
      data = Buffer.concat([data, chunk]);
      while (data.length >= 2 && data.length >= 2 + data.readUInt16BE(0)) {
        data = data.subarray(2 + data.readUInt16BE(0));
        if (++count === want) resolve(count);
      }
    });
  });
}

test('100 queries pipelined in one write are answered, never more than maxInFlight at once', async () => {
  let open = 0;
  let most = 0;
  const waiting: Array<() => void> = [];
  const { server, port } = await listen((message) => {
    most = Math.max(most, ++open);
    // Answers wait until the next turn, so whatever the server took in at once is in flight together.
    return new Promise((resolve) => waiting.push(() => (open--, resolve(message))));
  });
  const release = setInterval(() => waiting.splice(0).forEach((answer) => answer()), 1);
  const socket = connect(port, '127.0.0.1');
  try {
    const answered = countAnswers(socket, 100);
    socket.write(Buffer.concat(Array.from({ length: 100 }, (_unused, id) => framed(id))));
    assert.equal(await answered, 100);
    assert.ok(most <= tcpConnectionLimits.maxInFlight, `${most} queries were open at once`);
  } finally {
    clearInterval(release);
    socket.destroy();
    server.close();
  }
});

test('an answer larger than TCP can frame closes the connection instead of throwing', async () => {
  const { server, port } = await listen(() => Buffer.alloc(70_000));
  const socket = connect(port, '127.0.0.1');
  try {
    socket.write(framed(1));
    socket.resume();
    await once(socket, 'close');
  } finally {
    socket.destroy();
    server.close();
  }
});

test('past the cap, the idlest connection is closed for a newcomer', async () => {
  const { server, port, cap } = await listen((message) => message);
  const sockets = Array.from({ length: 5 }, () => connect(port, '127.0.0.1'));
  try {
    const closed = once(sockets[0]!, 'close');
    for (const socket of sockets) socket.on('error', () => undefined);
    await closed;
    assert.equal(cap.size, 4);
  } finally {
    for (const socket of sockets) socket.destroy();
    server.close();
  }
});
