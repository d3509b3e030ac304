import type { ServerHttp2Stream } from 'node:http2';
import { GrpcServerCall } from '../../grpc/server-call.ts';
import type { AdsSink, AdsStream } from './ads-stream.ts';

/** An ADS call served on node:http2: the adapter between the relay core and Envoy's HTTP/2 stream. */
export class Http2AdsStream implements AdsStream {
  readonly #stream: ServerHttp2Stream;
  /** Its response headers and status. */
  readonly #call: GrpcServerCall;
  readonly #closed = new AbortController();

  constructor(stream: ServerHttp2Stream) {
    this.#stream = stream;
    this.#call = new GrpcServerCall(stream);
    stream.on('error', () => undefined); // 'close' follows, and aborts the signal
    stream.once('close', () => this.#closed.abort());
  }

  get signal(): AbortSignal {
    return this.#closed.signal;
  }

  receive(sink: AdsSink): void {
    this.#stream.on('data', (chunk: Buffer) => sink.data(chunk));
    this.#stream.on('end', () => sink.ended());
  }

  open(): void {
    this.#call.respond();
  }

  /** One socket read brings several DATA frames; they leave in one write, not one each. */
  send(bytes: Buffer): boolean {
    const stream = this.#stream;
    if (!stream.writableCorked) {
      stream.cork();
      process.nextTick(() => stream.uncork());
    }
    return stream.write(bytes);
  }

  drained(then: () => void): void {
    this.#stream.once('drain', then);
  }

  pause(): void {
    this.#stream.pause();
  }

  resume(): void {
    this.#stream.resume();
  }

  finish(status: number, details: string): void {
    const stream = this.#stream;
    if (stream.closed || stream.destroyed) return;
    stream.resume(); // later requests are read and dropped, so the stream can close
    this.#call.finish(status, details);
  }
}
