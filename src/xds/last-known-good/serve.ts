import type { KeptConfig, KeptType } from './config.ts';
import { deltaResponse, withNonce } from './wire.ts';
import { responseReader, type RequestFields, type XdsMode } from '../wire.ts';

function countResources(chunks: readonly Buffer[]): number {
  const { scanner, fields } = responseReader(chunks.reduce((sum, chunk) => sum + chunk.length, 0), 'sotw');
  for (const chunk of chunks) scanner.push(chunk);
  return fields.resources;
}

/** What a stream served from kept config sends, and what Envoy said about it. */
export type KeptOutcome =
  | { kind: 'send'; typeUrl: string; version: string; message: Buffer; resources: number }
  | { kind: 'ack' | 'nack' | 'missing' | 'nothing'; typeUrl: string; version?: string; error?: string };

/**
 * Answers one Envoy stream from the kept config while the discovery server
 * cannot be reached: each type Envoy asks for once, with a fresh nonce.
 * Delta: only the names Envoy subscribes to (all, for a wildcard), and
 * names it subscribes to later as they come. It never writes to the kept
 * config: what Envoy ACKs here is what it was already kept.
 */
export class KeptAnswers {
  readonly #mode: XdsMode;
  readonly #kept: KeptConfig;
  readonly #noncePrefix: string;
  #nextNonce = 1;
  /** Per type: the nonce and version last sent. */
  readonly #sent = new Map<string, { nonce: string; version: string }>();
  /** Delta, per type: wildcard or not, and the names sent so far. */
  readonly #delta = new Map<string, { wildcard: boolean; subscribed: Set<string>; sent: Set<string> }>();

  constructor(mode: XdsMode, kept: KeptConfig, noncePrefix: string) {
    this.#mode = mode;
    this.#kept = kept;
    this.#noncePrefix = noncePrefix;
  }

  answer(request: RequestFields): KeptOutcome {
    const { typeUrl } = request;
    const sent = this.#sent.get(typeUrl);
    if (sent && request.nonce === sent.nonce) {
      return request.error === undefined ? { kind: 'ack', typeUrl, version: sent.version } : { kind: 'nack', typeUrl, version: sent.version, error: request.error };
    }
    const kept = this.#kept.get(this.#mode, typeUrl);
    if (!kept) return { kind: 'missing', typeUrl };
    return this.#mode === 'sotw' ? this.#sotw(kept, sent !== undefined) : this.#deltaAnswer(kept, request);
  }

  #sotw(kept: KeptType, alreadySent: boolean): KeptOutcome {
    if (alreadySent) return { kind: 'nothing', typeUrl: kept.typeUrl };
    const nonce = this.#nonce(kept);
    return { kind: 'send', typeUrl: kept.typeUrl, version: kept.version, message: withNonce(kept.response!, nonce), resources: countResources(kept.response!) };
  }

  #deltaAnswer(kept: KeptType, request: RequestFields): KeptOutcome {
    let state = this.#delta.get(kept.typeUrl);
    if (!state) {
      state = { wildcard: request.names.length === 0, subscribed: new Set(), sent: new Set() };
      this.#delta.set(kept.typeUrl, state);
    }
    for (const name of request.names) name === '*' ? (state.wildcard = true) : state.subscribed.add(name);
    const due = [...kept.resources!.values()].filter((resource) => (state.wildcard || state.subscribed.has(resource.name)) && !state.sent.has(resource.name));
    if (due.length === 0 && this.#sent.has(kept.typeUrl)) return { kind: 'nothing', typeUrl: kept.typeUrl };
    for (const resource of due) state.sent.add(resource.name);
    const nonce = this.#nonce(kept);
    const message = deltaResponse({ typeUrl: kept.typeUrl, version: kept.version, nonce, resources: due.map((resource) => resource.bytes) });
    return { kind: 'send', typeUrl: kept.typeUrl, version: kept.version, message, resources: due.length };
  }

  #nonce(kept: KeptType): string {
    const nonce = `${this.#noncePrefix}-${this.#nextNonce++}`;
    this.#sent.set(kept.typeUrl, { nonce, version: kept.version });
    return nonce;
  }
}
