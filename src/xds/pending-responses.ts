/** A response relayed to Envoy and held until Envoy ACKs or NACKs it. */
export interface PendingResponse {
  typeUrl: string;
  version: string;
  nonce: string;
  message: Buffer;
}

/**
 * The responses of one stream that Envoy has not answered yet, oldest first.
 * Envoy answers each in order, usually within milliseconds, so this holds
 * about one response; `limitBytes` bounds it for an Envoy that stops
 * answering. Dropping one makes its type unknown (`onLost`): for Delta the
 * kept state could no longer be rebuilt, for SotW it would go stale.
 */
export class PendingResponses {
  readonly #limitBytes: number;
  readonly #onLost: (typeUrl: string) => void;
  #queue: PendingResponse[] = [];
  #bytes = 0;

  constructor(limitBytes: number, onLost: (typeUrl: string) => void) {
    this.#limitBytes = limitBytes;
    this.#onLost = onLost;
  }

  get bytes(): number {
    return this.#bytes;
  }

  /** Whether a response of this size may be held at all. */
  fits(length: number): boolean {
    return length <= this.#limitBytes;
  }

  add(response: PendingResponse): void {
    this.#queue.push(response);
    this.#bytes += response.message.length;
    while (this.#bytes > this.#limitBytes) this.#drop(this.#queue.shift()!);
  }

  /** Takes the response Envoy answered with this nonce, and any of its type before it. */
  settle(typeUrl: string, nonce: string): PendingResponse | undefined {
    const index = this.#queue.findIndex((entry) => entry.typeUrl === typeUrl && entry.nonce === nonce);
    if (index < 0) return undefined;
    const answered = this.#queue[index]!;
    const earlier = this.#queue.slice(0, index).filter((entry) => entry.typeUrl === typeUrl);
    this.#queue = this.#queue.filter((entry, at) => at > index || entry.typeUrl !== typeUrl);
    this.#bytes -= answered.message.length + earlier.reduce((sum, entry) => sum + entry.message.length, 0);
    return answered;
  }

  #drop(entry: PendingResponse): void {
    this.#bytes -= entry.message.length;
    this.#onLost(entry.typeUrl);
  }
}
