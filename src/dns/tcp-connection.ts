import type { Socket } from 'node:net';
import type { ConnectionCap } from '../shared/connection-cap.ts';

/** The largest DNS message: TCP frames it with a 2-byte length (RFC 1035 4.2.2). */
export const maxTcpMessageBytes = 65_535;

/** What one TCP connection may hold, so a client that pipelines and never reads costs a bounded amount. */
export const tcpConnectionLimits = {
  /** Connections at once; past it the idlest is closed for the newcomer (every peer is the pod's own, over loopback). */
  maxConnections: 128,
  /** Queries answered or forwarded at once on one connection; reading pauses at this many. */
  maxInFlight: 8,
  /** Bytes waiting to be sent before reading pauses: the client is not reading. */
  maxQueuedBytes: 64 * 1024,
  /** No byte read or sent for this long closes the connection: idle, trickling, or a reader that stopped reading. */
  idleMs: 10_000,
} as const;

export type Answerer = (message: Buffer) => Buffer | undefined | Promise<Buffer | undefined>;

/**
 * Serves one DNS/TCP connection: length-prefixed queries in, answers out in
 * any order. Reading stops while `maxInFlight` queries are open or the
 * client leaves `maxQueuedBytes` unread (back-pressure), so memory per
 * connection is bounded; the socket's timeout closes it when nothing moves.
 */
export function serveTcpConnection(socket: Socket, answer: Answerer, cap: ConnectionCap): void {
  const limits = tcpConnectionLimits;
  let buffered: Buffer = Buffer.alloc(0);
  let inFlight = 0;
  const full = () => inFlight >= limits.maxInFlight || socket.writableLength >= limits.maxQueuedBytes;
  /** Takes whole messages while there is room, then reads on only if there still is. */
  const pump = () => {
    while (!full() && buffered.length >= 2 && buffered.length >= 2 + buffered.readUInt16BE(0)) {
      const message = buffered.subarray(2, 2 + buffered.readUInt16BE(0));
      buffered = buffered.subarray(2 + message.length);
      if (inFlight++ === 0) cap.busy(socket);
      void Promise.resolve(answer(message)).then(settle, () => settle(undefined));
    }
    if (full() || buffered.length >= 2 + maxTcpMessageBytes) socket.pause();
    else if (socket.isPaused() && !socket.destroyed) socket.resume();
  };
  const settle = (response: Buffer | undefined) => {
    if (--inFlight === 0) cap.idle(socket);
    // Nothing to say (a response, not a query) or more than TCP can frame: the connection ends.
    if (!response || response.length > maxTcpMessageBytes) return void socket.destroy();
    if (socket.writable) socket.write(frame(response));
    pump();
  };
  socket.setTimeout(limits.idleMs, () => socket.destroy());
  socket.on('error', () => undefined); // 'close' follows
  socket.on('drain', pump);
  socket.on('data', (chunk: Buffer) => {
    // At most one partial message (64 KiB) and what arrived while paused is held: reading stops at the bound.
    buffered = buffered.length === 0 ? chunk : Buffer.concat([buffered, chunk]);
    pump();
  });
}

function frame(response: Buffer): Buffer {
  const length = Buffer.alloc(2);
  length.writeUInt16BE(response.length);
  return Buffer.concat([length, response]);
}
