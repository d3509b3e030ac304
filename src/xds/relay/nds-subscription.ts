import type { Logger } from '../../shared/log.ts';
import { NdsSplitter } from './nds-splitter.ts';
import { listenerType, nameTableType } from '../../discovery/type-urls.ts';
import { ndsAck, ndsSubscribe, readNdsResponse } from './nds-wire.ts';
import type { XdsMode } from '../../discovery/wire.ts';
import type { NameTableSink } from '../../discovery/consumers.ts';

export interface NdsSubscriptionOptions {
  mode: XdsMode;
  sink: NameTableSink;
  /** Writes a request message (unframed) on the upstream stream. */
  send(request: Buffer): void;
  /** Envoy's bytes, as the relay passed them on before (prefixes included). */
  forward(bytes: Buffer): void;
  maxBytes: number;
  logger: Logger;
}

/**
 * The agent's own subscription to the name table on Envoy's upstream stream,
 * as Istio's xDS proxy does it: asked for once Envoy asked for listeners,
 * answered (ACK/NACK) by the agent, never seen by Envoy.
 */
export class NdsSubscription {
  readonly #options: NdsSubscriptionOptions;
  readonly #splitter: NdsSplitter;
  #subscribed = false;
  /** Responses are taken in order; a table is built before the next is read. */
  #queue: Promise<void> = Promise.resolve();

  constructor(options: NdsSubscriptionOptions) {
    this.#options = options;
    this.#splitter = new NdsSplitter({
      mode: options.mode,
      forward: options.forward,
      nameTable: (message) => this.#received(message),
      maxBytes: options.maxBytes,
    });
  }

  /** Upstream bytes: Envoy's go on, NDS responses stop here. Throws WireError on a malformed frame. */
  push(chunk: Buffer): void {
    this.#splitter.push(chunk);
  }

  /** False while a response is part-way through (held to learn its type, or an NDS one). */
  get atBoundary(): boolean {
    return this.#splitter.atBoundary;
  }

  /** Called after each of Envoy's requests went upstream. */
  envoyRequested(typeUrl: string): void {
    if (this.#subscribed || typeUrl !== listenerType) return;
    this.#subscribed = true;
    this.#options.send(ndsSubscribe(this.#options.mode));
    this.#options.logger.info({ type: nameTableType }, 'subscribed to the DNS name table');
  }

  #received(message: Buffer): void {
    // A name table the agent never asked for is no answer to anything: not taken, not ACKed (Envoy never sees it either).
    if (!this.#subscribed) return void this.#options.logger.debug({ type: nameTableType }, 'NameTable response before the agent subscribed; dropped');
    this.#queue = this.#queue.then(() => this.#take(message));
  }

  async #take(message: Buffer): Promise<void> {
    const { mode, sink, logger } = this.#options;
    let error: string | undefined;
    let answered = { version: '', nonce: '' };
    try {
      const response = readNdsResponse(message, mode);
      answered = response;
      if (response.table) error = await sink.accept(response.table, response.version);
    } catch (failure) {
      error = `malformed NameTable response: ${(failure as Error).message}`;
    }
    if (error !== undefined) logger.warn({ version: answered.version, error }, 'name table rejected (NACK)');
    this.#options.send(ndsAck(mode, answered, error));
  }
}
