import { advanced, WireError } from './field-scanner.ts';

/**
 * gRPC's length-prefixed messages on an HTTP/2 stream: 1 flag byte
 * (compressed or not), a 4-byte big-endian length, then the message.
 */
export const prefixBytes = 5;

/** A message longer than the side's limit; ends the stream with RESOURCE_EXHAUSTED. */
export class FrameTooLarge extends WireError {
  override name = 'FrameTooLarge';
}

export interface FrameHandler {
  /** A message of `length` bytes begins; its bytes follow through `data`. */
  begin(length: number): void;
  data(bytes: Buffer): void;
  end(): void;
}

/** Splits a stream's DATA chunks into messages without waiting for whole ones. */
export class GrpcFrameReader {
  readonly #handler: FrameHandler;
  readonly #maxLength: number;
  readonly #prefix = Buffer.alloc(prefixBytes);
  #prefixFilled = 0;
  /** Bytes of the current message still to come; -1 between messages. */
  #left = -1;

  constructor(handler: FrameHandler, maxLength: number) {
    this.#handler = handler;
    this.#maxLength = maxLength;
  }

  /** True between messages: a stream may end here. */
  get atBoundary(): boolean {
    return this.#left === -1 && this.#prefixFilled === 0;
  }

  push(chunk: Buffer): void {
    let pos = 0;
    while (pos < chunk.length) {
      const next = this.#left === -1 ? this.#takePrefix(chunk, pos) : this.#takeBody(chunk, pos);
      pos = advanced(pos, next, 'the gRPC frame reader');
    }
  }

  #takeBody(chunk: Buffer, pos: number): number {
    const take = Math.min(this.#left, chunk.length - pos);
    // Mid-message, a DATA frame is usually all body: hand it over as it is.
    this.#handler.data(take === chunk.length ? chunk : chunk.subarray(pos, pos + take));
    this.#left -= take;
    if (this.#left === 0) this.#endMessage();
    return pos + take;
  }

  #takePrefix(chunk: Buffer, pos: number): number {
    const take = Math.min(prefixBytes - this.#prefixFilled, chunk.length - pos);
    chunk.copy(this.#prefix, this.#prefixFilled, pos, pos + take);
    this.#prefixFilled += take;
    if (this.#prefixFilled < prefixBytes) return pos + take;
    this.#prefixFilled = 0;
    const flag = this.#prefix[0]!;
    const length = this.#prefix.readUInt32BE(1);
    if (flag === 1) throw new WireError('compressed message, but the relay only accepts identity encoding');
    if (flag !== 0) throw new WireError(`bad message flag ${flag}`);
    if (length > this.#maxLength) throw new FrameTooLarge(`message of ${length} bytes, more than the ${this.#maxLength} allowed`);
    this.#left = length;
    this.#handler.begin(length);
    if (length === 0) this.#endMessage();
    return pos + take;
  }

  #endMessage(): void {
    this.#left = -1;
    this.#handler.end();
  }
}

/** A message with its prefix, uncompressed, ready for the stream. */
export function frame(message: Buffer): Buffer {
  const framed = Buffer.allocUnsafe(prefixBytes + message.length);
  framed[0] = 0;
  framed.writeUInt32BE(message.length, 1);
  message.copy(framed, prefixBytes);
  return framed;
}
