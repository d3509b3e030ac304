import { advanced } from '../../grpc/field-scanner.ts';
import { decodeVarint } from '../../grpc/proto-wire.ts';
import { GrpcFrameReader, prefixBytes } from '../../grpc/grpc-frame.ts';
import { nameTableType } from '../type-urls.ts';
import type { XdsMode } from '../wire.ts';

/**
 * Where a response's type URL can be read first: its own type_url (4), or
 * the first resource's Any.type_url, which servers write before the rest
 * (SotW resources[2] is an Any; Delta resources[2] is a Resource whose
 * resource[2] is the Any). A leaf is the string field to read.
 */
type Path = { [field: number]: Path | 'leaf' };
const typePaths: Record<XdsMode, Path> = {
  sotw: { 4: 'leaf', 2: { 1: 'leaf' } },
  delta: { 4: 'leaf', 2: { 2: { 1: 'leaf' } } },
};

/** How much of a response is held to learn its type; a type not known by then is Envoy's. */
const sniffLimitBytes = 64 * 1024;

export interface NdsSplitterOptions {
  mode: XdsMode;
  /** Bytes for Envoy, prefixes included, in order. */
  forward(bytes: Buffer): void;
  /** One whole NDS response message, which Envoy never sees. */
  nameTable(message: Buffer): void;
  maxBytes: number;
}

/**
 * Sorts the upstream's responses into Envoy's and the agent's (NDS) as they
 * stream past. A response is held only until its type shows, usually in its
 * first few hundred bytes; Envoy's are then passed on piece by piece as
 * before, and NDS responses are gathered whole for the agent.
 */
export class NdsSplitter {
  readonly #reader: GrpcFrameReader;
  #state: 'sniff' | 'forward' | 'capture' = 'sniff';
  #parts: Buffer[] = [];
  #held = 0;
  #length = 0;

  constructor(options: NdsSplitterOptions) {
    const path = typePaths[options.mode];
    this.#reader = new GrpcFrameReader({
      begin: (length) => {
        const prefix = Buffer.alloc(prefixBytes);
        prefix.writeUInt32BE(length, 1);
        this.#state = 'sniff';
        this.#parts = [prefix];
        this.#held = 0;
        this.#length = length;
      },
      data: (bytes) => {
        if (this.#state === 'forward') return options.forward(bytes);
        this.#parts.push(bytes);
        this.#held += bytes.length;
        if (this.#state === 'sniff') this.#sniff(path, options, false);
      },
      end: () => {
        if (this.#state === 'sniff') this.#sniff(path, options, true);
        if (this.#state === 'capture') options.nameTable(Buffer.concat(this.#parts.slice(1)));
        this.#parts = [];
      },
    }, options.maxBytes);
  }

  /** True between messages: the upstream may end here. */
  get atBoundary(): boolean {
    return this.#reader.atBoundary;
  }

  /** Throws WireError on a malformed frame, as the relay's own reader would. */
  push(chunk: Buffer): void {
    this.#reader.push(chunk);
  }

  #sniff(path: Path, options: NdsSplitterOptions, whole: boolean): void {
    const message = Buffer.concat(this.#parts.slice(1));
    this.#parts = [this.#parts[0]!, message];
    const typeUrl = findString(message, 0, this.#length, path);
    if (typeUrl === nameTableType) return void (this.#state = 'capture');
    if (typeUrl === undefined && !whole && this.#held < sniffLimitBytes) return;
    this.#state = 'forward';
    options.forward(Buffer.concat(this.#parts));
    this.#parts = [];
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
    advanced(from, at, 'the NDS type sniffer');
  }
  return at > bytes.length ? undefined : null;
}
