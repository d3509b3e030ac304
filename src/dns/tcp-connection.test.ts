import assert from 'node:assert/strict';
import type { Socket } from 'node:net';
import { describe, it } from 'node:test';
import { FakeTcpSocket } from './fake-tcp-socket.ts';
import { framed, serveTcpConnection } from './tcp-connection.ts';

const limits = { maxInFlight: 4, maxPendingWriteBytes: 100 };
const messages = (count: number, size = 20) => Buffer.concat(Array.from({ length: count }, (_, at) => framed(Buffer.alloc(size, at))));

function serve(handle: (message: Buffer) => Buffer | Promise<Buffer | undefined> | undefined) {
  const socket = new FakeTcpSocket(false);
  const handled: Buffer[] = [];
  const faults: unknown[] = [];
  serveTcpConnection(socket as unknown as Socket, {
    limits,
    handle: (message) => (handled.push(message), handle(message)),
    busy: () => undefined,
    idle: () => undefined,
    failed: (error) => faults.push(error),
  });
  return { socket, handled, faults };
}

describe('serveTcpConnection', () => {
  it('takes at most maxInFlight pipelined queries and stops reading until they are answered', () => {
    const { socket, handled } = serve(() => new Promise(() => undefined));
    socket.emit('data', messages(50));
    assert.equal(handled.length, 4);
    assert.equal(socket.paused, true);
  });

  it('stops reading while maxPendingWriteBytes of answers wait unread, and goes on at drain', async () => {
    const { socket, handled } = serve((message) => message);
    socket.emit('data', messages(50));
    assert.ok(handled.length < 10, `${handled.length} handled`);
    assert.equal(socket.paused, true);
    for (let turn = 0; turn < 5; turn++) await new Promise((resolve) => setImmediate(resolve));
    const before = handled.length;
    socket.writableLength = 0;
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(handled.length, before, 'every answer sent, the buffer read empty: still no reading before drain');
    socket.emit('drain');
    await new Promise((resolve) => setImmediate(resolve));
    assert.ok(handled.length > before, `${handled.length} handled after drain`);
  });

  it('turns an answer too large to frame into a fault and a closed connection, never a throw', async () => {
    const { socket, faults } = serve(() => Buffer.alloc(70_000));
    socket.emit('data', messages(1));
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(faults.length, 1);
    assert.equal(socket.destroyed, true);
  });

  it('closes the connection when a query gets no answer (dropped)', async () => {
    const { socket } = serve(() => undefined);
    socket.emit('data', messages(1));
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(socket.destroyed, true);
  });
});
