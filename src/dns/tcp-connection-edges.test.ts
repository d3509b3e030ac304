import assert from 'node:assert/strict';
import type { Socket } from 'node:net';
import { describe, it } from 'node:test';
import { FakeTcpSocket } from './fake-tcp-socket.ts';
import { framed, serveTcpConnection, type TcpConnectionLimits } from './tcp-connection.ts';

const turn = () => new Promise((resolve) => setImmediate(resolve));

function serve(
  handle: (message: Buffer) => Buffer | Promise<Buffer | undefined> | undefined,
  limits: TcpConnectionLimits = { maxInFlight: 4, maxPendingWriteBytes: 1_000 },
) {
  const socket = new FakeTcpSocket(true);
  const handled: Buffer[] = [];
  const events: string[] = [];
  serveTcpConnection(socket as unknown as Socket, {
    limits,
    handle: (message) => (handled.push(message), handle(message)),
    busy: () => events.push('busy'),
    idle: () => events.push('idle'),
    failed: (error) => events.push(`failed ${(error as Error).message}`),
  });
  return { socket, handled, events };
}

describe('serveTcpConnection: framing and flow', () => {
  it('frames an answer behind its length, up to 65,535 bytes, and refuses 65,536', () => {
    assert.deepEqual(framed(Buffer.from([7, 8, 9])), Buffer.from([0, 3, 7, 8, 9]));
    assert.deepEqual(framed(Buffer.alloc(65_535)).subarray(0, 2), Buffer.from([0xff, 0xff]));
    assert.throws(() => framed(Buffer.alloc(65_536)), /a 65536-byte answer does not fit a TCP message/);
  });

  it('reads messages split anywhere: a length byte alone, a message across chunks, two in one, an empty one', async () => {
    const { socket, handled } = serve((message) => message);
    const stream = Buffer.concat([framed(Buffer.from('abc')), framed(Buffer.alloc(0)), framed(Buffer.from('defg')), framed(Buffer.from('h'))]);
    for (const chunk of [stream.subarray(0, 1), stream.subarray(1, 4), stream.subarray(4, 5), stream.subarray(5, 9), stream.subarray(9, 14)])
      socket.emit('data', chunk);
    assert.deepEqual(handled.map(String), ['abc', '', 'defg']);
    socket.emit('data', stream.subarray(14));
    assert.deepEqual(handled.map(String), ['abc', '', 'defg', 'h']);
    await turn();
    assert.deepEqual(Buffer.concat(socket.written), stream);
  });

  it('says busy when the first query starts and idle when the last ends, once each', async () => {
    const answers: ((value: Buffer) => void)[] = [];
    const { socket, events } = serve(() => new Promise<Buffer>((resolve) => answers.push(resolve)));
    socket.emit('data', Buffer.concat([framed(Buffer.from('a')), framed(Buffer.from('b'))]));
    assert.deepEqual(events, ['busy']);
    answers[0]!(Buffer.from('A'));
    await turn();
    assert.deepEqual(events, ['busy']);
    answers[1]!(Buffer.from('B'));
    await turn();
    assert.deepEqual(events, ['busy', 'idle']);
    socket.emit('data', framed(Buffer.from('c')));
    assert.deepEqual(events, ['busy', 'idle', 'busy']);
  });

  it('pauses at exactly maxInFlight, and reads on when one is answered', async () => {
    const answers: ((value: Buffer) => void)[] = [];
    const { socket, handled } = serve(() => new Promise<Buffer>((resolve) => answers.push(resolve)), { maxInFlight: 2, maxPendingWriteBytes: 1_000 });
    socket.emit('data', framed(Buffer.from('a')));
    assert.equal(socket.paused, false, 'one of two in flight');
    socket.emit('data', Buffer.concat([framed(Buffer.from('b')), framed(Buffer.from('c'))]));
    assert.deepEqual([socket.paused, handled.length], [true, 2]);
    answers[0]!(Buffer.from('A'));
    await turn();
    assert.deepEqual([socket.paused, handled.map(String)], [true, ['a', 'b', 'c']], 'the buffered one started, two in flight again');
    answers[1]!(Buffer.from('B'));
    await turn();
    assert.equal(socket.paused, false);
  });

  it('pauses when exactly maxPendingWriteBytes wait unread', async () => {
    const { socket } = serve((message) => message, { maxInFlight: 16, maxPendingWriteBytes: 10 });
    socket.emit('data', framed(Buffer.from('1234567')));
    await turn();
    assert.deepEqual([socket.writableLength, socket.paused], [9, false]);
    socket.writableLength = 0;
    socket.emit('data', framed(Buffer.from('12345678')));
    await turn();
    assert.deepEqual([socket.writableLength, socket.paused], [10, true]);
  });

  it('writes nothing to a connection closed or no longer writable while its query was answered', async () => {
    for (const close of [(socket: FakeTcpSocket) => (socket.destroyed = true), (socket: FakeTcpSocket) => (socket.writable = false)]) {
      let answer: (value: Buffer) => void = () => undefined;
      const { socket } = serve(() => new Promise<Buffer>((resolve) => (answer = resolve)));
      socket.emit('data', framed(Buffer.from('a')));
      close(socket);
      answer(Buffer.from('A'));
      await turn();
      assert.deepEqual(socket.written, []);
    }
  });

  it('turns a handler that rejects into a fault and a closed connection', async () => {
    const { socket, events } = serve(() => Promise.reject(new Error('boom')));
    socket.emit('data', framed(Buffer.from('a')));
    await turn();
    assert.deepEqual([events.at(-1), socket.destroyed], ['failed boom', true]);
  });

  it('starts no message on a connection already closed', () => {
    const { socket, handled } = serve(() => undefined);
    socket.destroyed = true;
    socket.emit('data', Buffer.concat([framed(Buffer.from('a')), framed(Buffer.from('b'))]));
    assert.deepEqual(handled, []);
  });
});
