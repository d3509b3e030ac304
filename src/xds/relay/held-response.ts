import { advanced } from '../../grpc/field-scanner.ts';
import { decodeVarint } from '../../grpc/proto-wire.ts';
import { prefixBytes } from '../../grpc/grpc-frame.ts';
import type { XdsMode } from '../../discovery/wire.ts';

/**
 * Where a response's type URL can be read first: its own type_url (4), or
 * the first resource's Any.type_url, which servers write before the rest
 * (SotW resources[2] is an Any; Delta resources[2] is a Resource whose
 * resource[2] is the Any). A leaf is the string field to read.
 */
export type Path = { [field: number]: Path | 'leaf' };
export const typePaths: Record<XdsMode, Path> = {
  sotw: { 4: 'leaf', 2: { 1: 'leaf' } },
  delta: { 4: 'leaf', 2: { 2: { 1: 'leaf' } } },
};

/** How much of a response is held to learn its type; a type not known by then is Envoy's. */
const sniffLimitBytes = 64 * 1024;

/**
 * One upstream response held only until its type shows, for the relay's
 * stages that take some types out of the stream (NDS for the DNS proxy,
 * ECDS for Wasm): its gRPC prefix and the message bytes so far.
 */
export class HeldResponse {
  #parts: Buffer[] = [];
  #held = 0;
  #length = 0;

  /** A new message of `length` bytes begins; returns its gRPC prefix. */
  begin(length: number): Buffer {
    const prefix = Buffer.alloc(prefixBytes);
    prefix.writeUInt32BE(length, 1);
    this.#parts = [prefix];
    this.#held = 0;
    this.#length = length;
    return prefix;
  }

  add(bytes: Buffer): void {
    this.#parts.push(bytes);
    this.#held += bytes.length;
  }

  /**
   * Whether the response is of type `wanted` ('capture'), of another type
   * ('forward'), or cannot tell yet ('wait'). `whole`: every byte is in.
   */
  sniff(path: Path, wanted: string, whole: boolean): 'capture' | 'forward' | 'wait' {
    const message = this.message();
    this.#parts = [this.#parts[0]!, message];
    const typeUrl = findString(message, 0, this.#length, path);
    if (typeUrl === wanted) return 'capture';
    if (typeUrl === undefined && !whole && this.#held < sniffLimitBytes) return 'wait';
    return 'forward';
  }

  /** The message bytes held (the prefix left out). */
  message(): Buffer {
    return this.#parts.length === 2 ? this.#parts[1]! : Buffer.concat(this.#parts.slice(1));
  }

  /** The prefix and the bytes so far, as pieces (no second copy), and nothing held after. */
  release(): Buffer[] {
    const parts = this.#parts;
    this.#parts = [];
    return parts;
  }
}

/**
 * The first string at one of `path`'s leaves in `bytes[start, end)`, where
 * `bytes` may hold only the beginning of the message: undefined when more
 * bytes are needed, null when the range has none (or is not protobuf; the
 * relay's own reader reports that).
 */
export function findString(bytes: Buffer, start: number, end: number, path: Path): string | null | undefined {
  let at = start;
  while (at < end) {
    const from = at;
    const tag = decodeVarint(bytes, at);
    if (!tag) return at >= bytes.length || bytes.length - at < 10 ? undefined : null;
    const [key, next] = tag;
    const field = Math.floor(key / 8);
    const wireType = key % 8;
    at = next;
    if (wireType === 0) {
      const value = decodeVarint(bytes, at);
      if (!value) return undefined;
      at = value[1];
    } else if (wireType === 1 || wireType === 5) {
      at += wireType === 1 ? 8 : 4;
    } else if (wireType === 2) {
      const length = decodeVarint(bytes, at);
      if (!length) return undefined;
      const [size, valueStart] = length;
      const valueEnd = valueStart + size;
      const step = path[field];
      if (step === 'leaf') return valueEnd > bytes.length ? undefined : bytes.toString('utf8', valueStart, valueEnd);
      if (step) {
        const inner = findString(bytes, valueStart, Math.min(valueEnd, end), step);
        if (inner !== null) return inner;
      }
      at = valueEnd;
    } else {
      return null;
    }
    advanced(from, at, 'the type sniffer');
  }
  return at > bytes.length ? undefined : null;
}
