import { EventEmitter } from 'node:events';
import type { ClientHttp2Stream } from 'node:http2';
import { frame } from '../../grpc/grpc-frame.ts';
import type { UpstreamStream } from '../upstream/session.ts';
import { unframe } from './fake-ads-stream.ts';

/** The upstream call's stream as the relay core uses it, in memory. */
class FakeCall extends EventEmitter {
  readonly written: Buffer[] = [];
  readonly session = Object.assign(new EventEmitter(), { closed: false, destroyed: false });
  closed = false;
  destroyed = false;
  ended = false;
  paused = false;
  rstCode: number | undefined;
  /** While true, write() says the buffer is full. */
  full = false;

  write(bytes: Buffer): boolean {
    this.written.push(bytes);
    return !this.full;
  }

  end(): void {
    this.ended = true;
  }

  pause(): this {
    this.paused = true;
    return this;
  }

  resume(): this {
    this.paused = false;
    return this;
  }
}

/**
 * A scripted discovery server call (the relay's bufconn): the test answers
 * the call, sends responses, trailers or a reset, and reads what the relay
 * wrote upstream.
 */
export class FakeUpstream implements UpstreamStream {
  readonly call = new FakeCall();
  readonly stream = this.call as unknown as ClientHttp2Stream;
  readonly credential = 'certificate+token' as const;
  readonly held = { present: false, reason: 'plaintext' } as const;
  closes = 0;

  close(): void {
    this.closes++;
    this.call.closed = true;
  }

  /** The server answers the call's headers (`grpc-status` makes it Trailers-Only). */
  answer(headers: Record<string, string | number> = { ':status': 200 }): void {
    this.call.emit('response', headers);
  }

  /** One response message, framed; `cut` sends it in pieces of that size. */
  respond(message: Buffer, cut?: number): void {
    const bytes = frame(message);
    const size = cut ?? bytes.length;
    for (let at = 0; at < bytes.length; at += size) this.call.emit('data', bytes.subarray(at, at + size));
  }

  /** Raw bytes. */
  bytes(chunk: Buffer): void {
    this.call.emit('data', chunk);
  }

  /** The call ends with a status in trailers. */
  trailers(status: number, message = ''): void {
    this.call.emit('trailers', { 'grpc-status': String(status), 'grpc-message': message });
    this.closeCall();
  }

  /**
   * The call ends with trailers and END_STREAM, and no RST_STREAM follows: the
   * server's side is done while ours is open, so node:http2 emits 'end' and never 'close'.
   */
  trailersWithoutReset(status: number, message = ''): void {
    this.call.emit('trailers', { 'grpc-status': String(status), 'grpc-message': message });
    this.call.emit('end');
  }

  /** The stream closes (after trailers, or a reset with `rstCode`). */
  closeCall(rstCode?: number, error?: Error): void {
    this.call.rstCode = rstCode;
    if (error) this.call.emit('error', error);
    this.call.closed = true;
    this.call.emit('close');
  }

  /** The messages the relay wrote upstream. */
  messages(): Buffer[] {
    return unframe(Buffer.concat(this.call.written));
  }
}
