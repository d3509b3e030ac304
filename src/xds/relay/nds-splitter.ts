import { GrpcFrameReader } from '../../grpc/grpc-frame.ts';
import { nameTableType } from '../../discovery/type-urls.ts';
import type { XdsMode } from '../../discovery/wire.ts';
import { HeldResponse, typePaths, type Path } from './held-response.ts';

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
  readonly #response = new HeldResponse();

  constructor(options: NdsSplitterOptions) {
    const path = typePaths[options.mode];
    this.#reader = new GrpcFrameReader({
      begin: (length) => {
        this.#state = 'sniff';
        this.#response.begin(length);
      },
      data: (bytes) => {
        if (this.#state === 'forward') return options.forward(bytes);
        this.#response.add(bytes);
        if (this.#state === 'sniff') this.#sniff(path, options, false);
      },
      end: () => {
        if (this.#state === 'sniff') this.#sniff(path, options, true);
        if (this.#state === 'capture') options.nameTable(this.#response.message());
        this.#response.release();
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
    const verdict = this.#response.sniff(path, nameTableType, whole);
    if (verdict === 'wait') return;
    this.#state = verdict;
    if (verdict === 'forward') options.forward(Buffer.concat(this.#response.release()));
  }
}
