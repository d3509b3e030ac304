import type { Clock } from '../../shared/clock.ts';
import type { Logger } from '../../shared/log.ts';
import type { LastKnownGoodConfig } from './config.ts';
import { readDeltaChanges } from './wire.ts';
import { PendingResponses } from './pending-responses.ts';
import { newDeltaSubscription, subscribedNames, updateDeltaSubscription, type DeltaSubscription } from './delta-subscription.ts';
import type { RequestFields, ResponseFields, XdsMode } from '../../discovery/wire.ts';

export interface LastKnownGoodRecorderOptions {
  mode: XdsMode;
  lastKnownGood: LastKnownGoodConfig;
  clock: Clock;
  logger: Logger;
  /** Most bytes of unanswered responses one stream holds (and the largest response kept); 0 keeps nothing. */
  pendingBytes: number;
}

/**
 * The relayed stream's side of last-known-good: holds on to each response's
 * chunks as they stream past to Envoy (the same buffers, not copies: while
 * Envoy is slow they sit in the write queue anyway), until Envoy answers,
 * and hands ACKed ones to the last-known-good config. A NACKed response is dropped.
 */
export class LastKnownGoodRecorder {
  readonly #options: LastKnownGoodRecorderOptions;
  readonly #pending: PendingResponses;
  /** The chunks of the response going past, when it fits the budget. */
  #chunks: Buffer[] | undefined;
  #length = 0;
  /** Delta types whose first request said Envoy holds nothing: the first ACK starts afresh. */
  readonly #fresh = new Set<string>();
  readonly #asked = new Set<string>();
  /** Delta types a lost response left unknown: later changes build on it, so nothing more is kept on this stream. */
  readonly #untracked = new Set<string>();
  /** Delta: this stream's subscription per type (a new stream starts its own). */
  readonly #subscriptions = new Map<string, DeltaSubscription>();

  constructor(options: LastKnownGoodRecorderOptions) {
    this.#options = options;
    this.#pending = new PendingResponses({ limitBytes: options.pendingBytes, latestOnly: options.mode === 'sotw', onLost: (typeUrl) => this.#lost(typeUrl) });
  }

  get pendingBytes(): number {
    return this.#pending.bytes;
  }

  begin(length: number): void {
    if (this.#options.pendingBytes === 0) return;
    this.#chunks = this.#pending.fits(length) ? [] : undefined;
    this.#length = length;
  }

  data(bytes: Buffer): void {
    this.#chunks?.push(bytes);
  }

  /** The response's last byte went past. */
  end(fields: ResponseFields): void {
    const chunks = this.#chunks;
    this.#chunks = undefined;
    if (this.#options.pendingBytes === 0) return;
    if (!chunks) return this.#lost(fields.typeUrl);
    this.#pending.add({ typeUrl: fields.typeUrl, version: fields.version, nonce: fields.nonce, chunks, length: this.#length });
  }

  /** A request from Envoy: its subscription, and maybe an ACK or NACK. */
  request(fields: RequestFields): void {
    const { mode, lastKnownGood } = this.#options;
    if (!this.#asked.has(fields.typeUrl)) {
      this.#asked.add(fields.typeUrl);
      if (mode === 'delta' && fields.initialVersions === 0) this.#fresh.add(fields.typeUrl);
    }
    if (fields.nonce) this.#settle(fields);
    lastKnownGood.subscribe(mode, fields.typeUrl, mode === 'delta' ? this.#deltaNames(fields) : fields.names);
  }

  #deltaNames(fields: RequestFields): string[] {
    let subscription = this.#subscriptions.get(fields.typeUrl);
    if (!subscription) this.#subscriptions.set(fields.typeUrl, (subscription = newDeltaSubscription()));
    updateDeltaSubscription(subscription, fields);
    return subscribedNames(subscription);
  }

  #settle(fields: RequestFields): void {
    const answered = this.#pending.settle(fields.typeUrl, fields.nonce);
    if (!answered || fields.error !== undefined) return;
    const { mode, lastKnownGood, clock } = this.#options;
    if (mode === 'sotw') return lastKnownGood.keepSotw(answered.typeUrl, answered.version, answered.chunks, clock.now());
    if (this.#untracked.has(answered.typeUrl)) return;
    const reset = this.#fresh.delete(answered.typeUrl);
    try {
      lastKnownGood.applyDelta(
        answered.typeUrl,
        { version: answered.version, reset, ...readDeltaChanges(Buffer.concat(answered.chunks, answered.length)) },
        clock.now(),
      );
    } catch (error) {
      this.#options.logger.warn({ type: answered.typeUrl, err: error }, 'cannot read an ACKed Delta response; its type is not kept');
      lastKnownGood.forget(mode, answered.typeUrl);
    }
  }

  #lost(typeUrl: string): void {
    // What still waits of the type is older than the lost response: Envoy moves on from it.
    this.#pending.forget(typeUrl);
    if (this.#options.mode === 'delta') this.#untracked.add(typeUrl);
    this.#options.logger.warn({ type: typeUrl, limitBytes: this.#options.pendingBytes }, 'a response too large to hold until its ACK; its type is not kept');
    this.#options.lastKnownGood.forget(this.#options.mode, typeUrl);
  }
}
