/** A response relayed to Envoy and held until Envoy ACKs or NACKs it. */
export interface PendingResponse {
  typeUrl: string;
  version: string;
  nonce: string;
  /** The message as the DATA chunks it went past in: referenced, not copied. */
  chunks: Buffer[];
  length: number;
}

/**
 * The responses of one stream that Envoy has not answered yet, oldest first.
 * Envoy answers each in order, usually within milliseconds, so this holds
 * about one response. SotW (`latestOnly`): a newer response of a type
 * replaces an older one still waiting, whose ACK would be outdated anyway;
 * so a stalled Envoy costs one response per type. Delta responses build on
 * each other: all are held, up to `limitBytes`; past it the oldest is
 * dropped and its type becomes unknown (`onLost`).
 */
export class PendingResponses {
  readonly #limitBytes: number;
  readonly #onLost: (typeUrl: string) => void;
  readonly #latestOnly: boolean;
  #queue: PendingResponse[] = [];
  #bytes = 0;

  constructor(options: { limitBytes: number; latestOnly: boolean; onLost: (typeUrl: string) => void }) {
    this.#limitBytes = options.limitBytes;
    this.#latestOnly = options.latestOnly;
    this.#onLost = options.onLost;
  }

  get bytes(): number {
    return this.#bytes;
  }

  /** Whether a response of this size may be held at all. */
  fits(length: number): boolean {
    return length <= this.#limitBytes;
  }

  add(response: PendingResponse): void {
    if (this.#latestOnly) this.#removeType(response.typeUrl);
    this.#queue.push(response);
    this.#bytes += response.length;
    while (this.#bytes > this.#limitBytes) this.#drop(this.#queue.shift()!);
  }

  /** Takes the response Envoy answered with this nonce, and any of its type before it. */
  settle(typeUrl: string, nonce: string): PendingResponse | undefined {
    const index = this.#queue.findIndex((entry) => entry.typeUrl === typeUrl && entry.nonce === nonce);
    if (index < 0) return undefined;
    const answered = this.#queue[index]!;
    const earlier = this.#queue.slice(0, index).filter((entry) => entry.typeUrl === typeUrl);
    this.#queue = this.#queue.filter((entry, at) => at > index || entry.typeUrl !== typeUrl);
    this.#bytes -= answered.length + earlier.reduce((sum, entry) => sum + entry.length, 0);
    return answered;
  }

  /** Drops every response of a type still waiting: none of them is worth keeping any more. */
  forget(typeUrl: string): void {
    this.#removeType(typeUrl);
  }

  #removeType(typeUrl: string): void {
    for (const entry of this.#queue) if (entry.typeUrl === typeUrl) this.#bytes -= entry.length;
    this.#queue = this.#queue.filter((entry) => entry.typeUrl !== typeUrl);
  }

  #drop(entry: PendingResponse): void {
    this.#bytes -= entry.length;
    this.#onLost(entry.typeUrl);
  }
}
