/**
 * A push parser for the top-level fields of one protobuf message whose bytes
 * arrive in pieces. It lets the relay read a response's type, version and
 * nonce while the response streams through: skipped fields (the resources)
 * are counted and stepped over, never held.
 */

/** A frame that is not a well-formed protobuf message. */
export class WireError extends Error {
  override name = 'WireError';
}

/**
 * A parsing step that consumed nothing. Every step of the wire parsers'
 * loops must move forward; one that does not repeats on the same bytes
 * forever, and a synchronous loop freezes the whole agent (health, SDS,
 * every other stream) where one odd frame from Envoy or the discovery
 * server should only end its own stream. Today's steps all advance; the
 * check turns a future slip, met by some peer's frame, into that stream's
 * error (a WireError, which every reader of the wire already handles)
 * instead of a process spinning at 100 % CPU.
 */
export class NoProgress extends WireError {
  override name = 'NoProgress';
}

/** `to` when it is past `from`; otherwise throws NoProgress naming the parser and where it stood. */
export function advanced(from: number, to: number, parser: string): number {
  if (to > from) return to;
  throw new NoProgress(`${parser} made no progress at byte ${from} (its step ended at ${to})`);
}

export const wireVarint = 0;
export const wireFixed64 = 1;
export const wireLen = 2;
export const wireFixed32 = 5;

export interface FieldSink {
  /** A top-level field begins. Return true to be given its bytes (length-delimited fields only). */
  field(number: number, wireType: number): boolean;
  /** The whole value of a field `field` asked for. */
  value(number: number, bytes: Buffer): void;
}

type State = 'tag' | 'varint' | 'length' | 'skip' | 'collect';

/** Values the sink asks for are names, versions and nonces; larger ones are refused. */
const defaultMaxValueBytes = 1024 * 1024;

export class FieldScanner {
  readonly #sink: FieldSink;
  readonly #maxValueBytes: number;
  readonly #length: number;
  /** Bytes of the message scanned so far; every push is scanned whole. */
  #offset = 0;
  #state: State = 'tag';
  #varint = 0;
  #shift = 0;
  #varintStart = 0;
  #field = 0;
  /** Whether the sink asked for the length-delimited field whose length is being read. */
  #wanted = false;
  /** Bytes left in the value being skipped or collected. */
  #left = 0;
  #parts: Buffer[] = [];

  constructor(sink: FieldSink, length: number, maxValueBytes = defaultMaxValueBytes) {
    this.#sink = sink;
    this.#length = length;
    this.#maxValueBytes = maxValueBytes;
  }

  /** Scans the next bytes of the message; throws WireError at the first malformed byte. */
  push(chunk: Buffer): void {
    if (this.#offset + chunk.length > this.#length) throw new WireError(`message is longer than its declared ${this.#length} bytes`);
    let pos = 0;
    while (pos < chunk.length) {
      const next = this.#state === 'skip' || this.#state === 'collect' ? this.#takeValue(chunk, pos) : this.#takeVarint(chunk, pos);
      pos = advanced(pos, next, 'the field scanner');
    }
  }

  /** Call when the message's bytes are all pushed: it must end between fields. */
  finish(): void {
    if (this.#offset < this.#length) throw new WireError(`message ended ${this.#length - this.#offset} bytes early`);
    if (this.#state !== 'tag' || this.#shift > 0) throw new WireError(`message ends inside field ${this.#field || '(tag)'}`);
  }

  #takeValue(chunk: Buffer, pos: number): number {
    const take = Math.min(this.#left, chunk.length - pos);
    if (this.#state === 'collect') this.#parts.push(chunk.subarray(pos, pos + take));
    this.#left -= take;
    this.#offset += take;
    if (this.#left === 0) this.#valueDone();
    return pos + take;
  }

  /** Reads varint bytes until the varint ends or the chunk does; a varint may span chunks. */
  #takeVarint(chunk: Buffer, pos: number): number {
    if (this.#shift === 0) this.#varintStart = this.#offset;
    let value = this.#varint;
    let shift = this.#shift;
    const start = pos;
    while (pos < chunk.length) {
      const byte = chunk[pos++]!;
      value += (byte & 0x7f) * 2 ** shift;
      if (byte < 0x80) {
        this.#offset += pos - start;
        this.#varint = 0;
        this.#shift = 0;
        this.#onVarint(value);
        return pos;
      }
      shift += 7;
      if (shift >= 70) throw new WireError(`varint longer than 10 bytes at byte ${this.#varintStart}`);
    }
    this.#offset += pos - start;
    this.#varint = value;
    this.#shift = shift;
    return pos;
  }

  #onVarint(value: number): void {
    if (this.#state === 'tag') this.#onTag(value);
    else if (this.#state === 'length') this.#onLength(value);
    else this.#state = 'tag';
  }

  #onTag(tag: number): void {
    const field = Math.floor(tag / 8);
    const wireType = tag % 8;
    if (field === 0) throw new WireError(`field number 0 at byte ${this.#varintStart}`);
    this.#field = field;
    const wanted = this.#sink.field(field, wireType);
    switch (wireType) {
      case wireVarint:
        this.#state = 'varint';
        return;
      case wireFixed64:
        return this.#startValue(8, false);
      case wireFixed32:
        return this.#startValue(4, false);
      case wireLen:
        this.#state = 'length';
        this.#wanted = wanted;
        return;
      default:
        throw new WireError(`unsupported wire type ${wireType} at byte ${this.#varintStart}`);
    }
  }

  #onLength(length: number): void {
    if (this.#wanted && length > this.#maxValueBytes)
      throw new WireError(`field ${this.#field} is ${length} bytes, more than the ${this.#maxValueBytes} allowed`);
    this.#startValue(length, this.#wanted);
  }

  #startValue(length: number, collect: boolean): void {
    if (length > this.#length - this.#offset)
      throw new WireError(`field ${this.#field} runs past the end of the message (${length} bytes at byte ${this.#offset})`);
    this.#state = collect ? 'collect' : 'skip';
    this.#left = length;
    if (length === 0) this.#valueDone();
  }

  #valueDone(): void {
    if (this.#state === 'collect') {
      const value = this.#parts.length === 1 ? this.#parts[0]! : Buffer.concat(this.#parts);
      this.#parts = [];
      this.#sink.value(this.#field, value);
    }
    this.#state = 'tag';
  }
}
