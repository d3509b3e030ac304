import type { Socket } from 'node:net';
import { maxTcpMessageBytes } from './answer.ts';

/** What one TCP connection may hold: queries being answered at once, and answer bytes the client has not read yet. */
export interface TcpConnectionLimits {
  maxInFlight: number;
  maxPendingWriteBytes: number;
}

/** CoreDNS and Unbound let a connection pipeline some tens of queries; 16 answers at most 1 MiB. */
export const dnsTcpConnectionLimits: TcpConnectionLimits = { maxInFlight: 16, maxPendingWriteBytes: 64 * 1024 };

export interface TcpConnectionOptions {
  limits: TcpConnectionLimits;
  /** The answer to one message, or undefined to close the connection; never rejects. */
  handle(message: Buffer): Buffer | undefined | Promise<Buffer | undefined>;
  /** A query started (first in flight) or the last one ended: for the connection cap's idle shedding. */
  busy(): void;
  idle(): void;
  /** Something no client should be able to cause: logged at debug and counted; the connection is closed. */
  failed(error: unknown): void;
}

/**
 * One DNS/TCP connection: 2-byte length-prefixed messages, answered in any
 * order. Reading stops while `maxInFlight` queries are being answered or
 * the client has not read `maxPendingWriteBytes` of answers (the kernel's
 * buffers then push back on the client), so a client that pipelines and
 * never reads holds a bounded amount: at most one partial message beside.
 */
export function serveTcpConnection(socket: Socket, options: TcpConnectionOptions): void {
  const { limits } = options;
  let buffered: Buffer = Buffer.alloc(0);
  let inFlight = 0;
  const full = () => inFlight >= limits.maxInFlight || socket.writableLength >= limits.maxPendingWriteBytes;

  const guard = (step: () => void) => {
    try {
      step();
    } catch (error) {
      options.failed(error);
      socket.destroy();
    }
  };

  const pump = () => {
    while (!full() && !socket.destroyed) {
      const message = nextMessage(buffered);
      if (!message) break;
      buffered = buffered.subarray(2 + message.length);
      start(message);
    }
    if (full()) socket.pause();
    else socket.resume();
  };

  const start = (message: Buffer) => {
    if (inFlight++ === 0) options.busy();
    void Promise.resolve(options.handle(message)).then((response) => guard(() => finish(response)), (error: unknown) => guard(() => {
      throw error;
    }));
  };

  const finish = (response: Buffer | undefined) => {
    if (--inFlight === 0) options.idle();
    if (!response) return void socket.destroy();
    if (socket.destroyed || !socket.writable) return;
    socket.write(framed(response));
    pump();
  };

  socket.on('data', (chunk: Buffer) => guard(() => {
    buffered = buffered.length === 0 ? chunk : Buffer.concat([buffered, chunk]);
    pump();
  }));
  socket.on('drain', () => guard(pump));
}

/** The first whole message in `buffered`, or undefined while it is still arriving. */
function nextMessage(buffered: Buffer): Buffer | undefined {
  if (buffered.length < 2) return undefined;
  const length = buffered.readUInt16BE(0);
  return buffered.length >= 2 + length ? buffered.subarray(2, 2 + length) : undefined;
}

/** The answer behind its 2-byte length; one past 65,535 bytes cannot be framed, and is a fault, never a thrown write. */
export function framed(response: Buffer): Buffer {
  if (response.length > maxTcpMessageBytes) throw new RangeError(`a ${response.length}-byte answer does not fit a TCP message`);
  const length = Buffer.alloc(2);
  length.writeUInt16BE(response.length);
  return Buffer.concat([length, response]);
}
