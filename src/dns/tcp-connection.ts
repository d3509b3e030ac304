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
 * never reads holds a bounded amount: at most one read chunk beside.
 */
export function serveTcpConnection(socket: Socket, options: TcpConnectionOptions): void {
  const connection = new TcpConnection(socket, options);
  socket.on('data', (chunk: Buffer) => connection.guard(() => connection.take(chunk)));
  socket.on('drain', () => connection.guard(() => connection.pump()));
}

class TcpConnection {
  readonly #socket: Socket;
  readonly #options: TcpConnectionOptions;
  #buffered: Buffer = Buffer.alloc(0);
  #inFlight = 0;

  constructor(socket: Socket, options: TcpConnectionOptions) {
    this.#socket = socket;
    this.#options = options;
  }

  /** Runs one step; what it throws is a fault that closes the connection, never an exception out of a socket event. */
  guard(step: () => void): void {
    try {
      step();
    } catch (error) {
      this.#options.failed(error);
      this.#socket.destroy();
    }
  }

  take(chunk: Buffer): void {
    this.#buffered = this.#buffered.length === 0 ? chunk : Buffer.concat([this.#buffered, chunk]);
    this.pump();
  }

  /** Starts the whole messages buffered while there is room, then reads on or stops reading. */
  pump(): void {
    while (!this.#full() && !this.#socket.destroyed) {
      const message = nextMessage(this.#buffered);
      if (!message) break;
      this.#buffered = this.#buffered.subarray(2 + message.length);
      this.#start(message);
    }
    if (this.#full()) this.#socket.pause();
    else this.#socket.resume();
  }

  #full(): boolean {
    const { limits } = this.#options;
    return this.#inFlight >= limits.maxInFlight || this.#socket.writableLength >= limits.maxPendingWriteBytes;
  }

  #start(message: Buffer): void {
    if (this.#inFlight++ === 0) this.#options.busy();
    const rethrow = (error: unknown) => {
      throw error;
    };
    void Promise.resolve(this.#options.handle(message)).then(
      (response) => this.guard(() => this.#finish(response)),
      (error: unknown) => this.guard(() => rethrow(error)),
    );
  }

  #finish(response: Buffer | undefined): void {
    if (--this.#inFlight === 0) this.#options.idle();
    if (!response) return void this.#socket.destroy();
    if (this.#socket.destroyed || !this.#socket.writable) return;
    this.#socket.write(framed(response));
    this.pump();
  }
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
