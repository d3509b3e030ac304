import type { LastKnownGoodConfig, LastKnownGoodType } from './config.ts';
import { deltaResponse, withNonce } from './wire.ts';
import { newDeltaSubscription, updateDeltaSubscription, type DeltaSubscription } from './delta-subscription.ts';
import { responseReader, type RequestFields, type XdsMode } from '../../discovery/wire.ts';

function countResources(chunks: readonly Buffer[]): number {
  const { scanner, fields } = responseReader(chunks.reduce((sum, chunk) => sum + chunk.length, 0), 'sotw');
  for (const chunk of chunks) scanner.push(chunk);
  return fields.resources;
}

/** What a stream served from last-known-good config sends, and what Envoy said about it. */
export type LastKnownGoodOutcome =
  | { kind: 'send'; typeUrl: string; version: string; message: Buffer; resources: number }
  | { kind: 'ack' | 'nack' | 'missing' | 'nothing'; typeUrl: string; version?: string; error?: string };

/**
 * Answers one Envoy stream from the last-known-good config while the discovery server
 * cannot be reached: each type Envoy asks for once, with a fresh nonce.
 * Delta: only the names Envoy subscribes to (all, for a wildcard), and
 * names it subscribes to later as they come. It never writes to the last-known-good
 * config: what Envoy ACKs here is what it was already kept.
 */
export class LastKnownGoodAnswers {
  readonly #mode: XdsMode;
  readonly #lastKnownGood: LastKnownGoodConfig;
  readonly #noncePrefix: string;
  #nextNonce = 1;
  /** Per type: the nonce and version last sent. */
  readonly #sent = new Map<string, { nonce: string; version: string }>();
  /** Delta, per type: the stream's subscription, and the names sent so far that it still covers. */
  readonly #delta = new Map<string, { subscription: DeltaSubscription; sent: Set<string> }>();

  constructor(mode: XdsMode, lastKnownGood: LastKnownGoodConfig, noncePrefix: string) {
    this.#mode = mode;
    this.#lastKnownGood = lastKnownGood;
    this.#noncePrefix = noncePrefix;
  }

  answer(request: RequestFields): LastKnownGoodOutcome {
    const { typeUrl } = request;
    const sent = this.#sent.get(typeUrl);
    if (sent && request.nonce === sent.nonce) {
      return request.error === undefined
        ? { kind: 'ack', typeUrl, version: sent.version }
        : { kind: 'nack', typeUrl, version: sent.version, error: request.error };
    }
    const lastKnownGood = this.#lastKnownGood.get(this.#mode, typeUrl);
    if (!lastKnownGood) return { kind: 'missing', typeUrl };
    return this.#mode === 'sotw' ? this.#sotw(lastKnownGood, sent !== undefined) : this.#deltaAnswer(lastKnownGood, request);
  }

  #sotw(lastKnownGood: LastKnownGoodType, alreadySent: boolean): LastKnownGoodOutcome {
    if (alreadySent) return { kind: 'nothing', typeUrl: lastKnownGood.typeUrl };
    const nonce = this.#nonce(lastKnownGood);
    return {
      kind: 'send',
      typeUrl: lastKnownGood.typeUrl,
      version: lastKnownGood.version,
      message: withNonce(lastKnownGood.response!, nonce),
      resources: countResources(lastKnownGood.response!),
    };
  }

  #deltaAnswer(lastKnownGood: LastKnownGoodType, request: RequestFields): LastKnownGoodOutcome {
    let state = this.#delta.get(lastKnownGood.typeUrl);
    if (!state) this.#delta.set(lastKnownGood.typeUrl, (state = { subscription: newDeltaSubscription(), sent: new Set() }));
    const { subscription, sent } = state;
    updateDeltaSubscription(subscription, request);
    // Envoy forgets what it unsubscribes from: subscribing again must send it again.
    for (const name of request.unsubscribe) sent.delete(name);
    const due = [...lastKnownGood.resources!.values()].filter(
      (resource) => (subscription.wildcard || subscription.names.has(resource.name)) && !sent.has(resource.name),
    );
    if (due.length === 0 && this.#sent.has(lastKnownGood.typeUrl)) return { kind: 'nothing', typeUrl: lastKnownGood.typeUrl };
    for (const resource of due) sent.add(resource.name);
    const nonce = this.#nonce(lastKnownGood);
    const message = deltaResponse({ typeUrl: lastKnownGood.typeUrl, version: lastKnownGood.version, nonce, resources: due.map((resource) => resource.bytes) });
    return { kind: 'send', typeUrl: lastKnownGood.typeUrl, version: lastKnownGood.version, message, resources: due.length };
  }

  #nonce(lastKnownGood: LastKnownGoodType): string {
    const nonce = `${this.#noncePrefix}-${this.#nextNonce++}`;
    this.#sent.set(lastKnownGood.typeUrl, { nonce, version: lastKnownGood.version });
    return nonce;
  }
}
