import { frame } from '../../grpc/grpc-frame.ts';
import type { AdsSink, AdsStream } from './ads-stream.ts';

/** Splits gRPC-framed bytes into their messages (the fakes' bytes are whole frames). */
export function unframe(bytes: Buffer): Buffer[] {
  const messages: Buffer[] = [];
  for (let at = 0; at + 5 <= bytes.length;) {
    const length = bytes.readUInt32BE(at + 1);
    messages.push(bytes.subarray(at + 5, at + 5 + length));
    at += 5 + length;
  }
  return messages;
}

/**
 * An in-memory ADS call for the relay core's unit tests: the test plays
 * Envoy (requests, half-close, reset, a full buffer) and reads what the
 * relay sent and how it finished the call.
 */
export class FakeAdsStream implements AdsStream {
  readonly #closed = new AbortController();
  #sink: AdsSink | undefined;
  #drained: (() => void)[] = [];
  /** Response headers sent. */
  opened = false;
  readonly sent: Buffer[] = [];
  finished: { status: number; details: string } | undefined;
  paused = false;
  /** While true, send() says the buffer is full. */
  full = false;

  get signal(): AbortSignal {
    return this.#closed.signal;
  }

  receive(sink: AdsSink): void {
    this.#sink = sink;
  }

  open(): void {
    if (!this.signal.aborted && !this.finished) this.opened = true;
  }

  send(bytes: Buffer): boolean {
    this.sent.push(bytes);
    return !this.full;
  }

  drained(then: () => void): void {
    this.#drained.push(then);
  }

  pause(): void {
    this.paused = true;
  }

  resume(): void {
    this.paused = false;
  }

  finish(status: number, details: string): void {
    if (this.signal.aborted || this.finished) return;
    this.finished = { status, details };
  }

  // What the test does as Envoy.

  /** One request, framed. */
  request(message: Buffer): void {
    this.#sink?.data(frame(message));
  }

  /** Raw bytes, as they come off the wire. */
  bytes(chunk: Buffer): void {
    this.#sink?.data(chunk);
  }

  /** Envoy half-closes its side. */
  end(): void {
    this.#sink?.ended();
  }

  /** Envoy resets the call. */
  reset(): void {
    this.#closed.abort();
  }

  /** Envoy took what was buffered. */
  drain(): void {
    this.full = false;
    const waiting = this.#drained;
    this.#drained = [];
    for (const then of waiting) then();
  }

  /** The messages sent to Envoy so far. */
  messages(): Buffer[] {
    return unframe(Buffer.concat(this.sent));
  }
}
