import type { Logger } from '../shared/log.ts';
import { readRequest } from '../discovery/wire.ts';
import { encodeSecretResponse } from './secret-proto.ts';
import { secretType } from '../discovery/type-urls.ts';
import type { SecretStore } from './secret-store.ts';
import type { SdsMetrics } from './metrics.ts';

/** Reference-counted interest in names, so file-backed names are watched while someone holds them. */
export interface Subscriptions {
  acquire(name: string): void;
  release(name: string): void;
}

export interface SdsStreamOptions {
  id: number;
  store: SecretStore;
  subscriptions: Subscriptions;
  /** Writes one DiscoveryResponse; false once the stream is gone. */
  send: (message: Buffer) => boolean;
  metrics: SdsMetrics;
  logger: Logger;
  now: () => number;
}

/** A sent secret, as /debug/sds shows it: no bytes. */
export interface HeldSecret {
  name: string;
  serial: string;
  expiresAt: string;
}

/** A malformed request; the server ends the stream with INVALID_ARGUMENT. */
export class BadSdsRequest extends Error {
  override name = 'BadSdsRequest';
}

/**
 * Names one stream may hold. Envoy asks for a few (default, ROOTCA, some
 * file-cert: names); a request naming thousands would start a watch and a
 * log line for each. The stream ends with RESOURCE_EXHAUSTED instead.
 */
export const maxNamesPerStream = 256;

export class TooManyNames extends Error {
  override name = 'TooManyNames';
}

/**
 * One StreamSecrets call, State of the World: each request names every
 * secret Envoy wants on this stream; each response carries every one of them
 * the store can serve. A name the store cannot serve yet is waited for (Envoy
 * keeps the cluster or listener warming), with the reason in /debug/sds.
 */
export class SdsStream {
  readonly #options: SdsStreamOptions;
  #names = new Set<string>();
  /** name → content hash of what Envoy was last sent. */
  readonly #sent = new Map<string, string>();
  #version = 0;
  #nonce = '';
  readonly since: Date;

  constructor(options: SdsStreamOptions) {
    this.#options = options;
    this.since = new Date(options.now());
  }

  get id(): number {
    return this.#options.id;
  }

  /** Handles one DiscoveryRequest; throws BadSdsRequest for one that cannot be served. */
  request(bytes: Buffer): void {
    const request = readRequest(bytes, 'sotw');
    if (request.typeUrl && request.typeUrl !== secretType) throw new BadSdsRequest(`type_url ${request.typeUrl} is not ${secretType}`);
    if (request.error !== undefined) this.#nacked(request.nonce, request.error);
    const names = new Set(request.names);
    if (names.size > maxNamesPerStream) throw new TooManyNames(`${names.size} names; a stream may hold at most ${maxNamesPerStream}`);
    this.#subscribe(names);
    this.push();
  }

  /** Sends what changed among this stream's names (a store change, or a new subscription). */
  push(): void {
    const serving = [...this.#names].flatMap((name) => {
      const entry = this.#options.store.get(name);
      return entry ? [{ name, entry }] : [];
    });
    const changed = serving.length !== this.#sent.size || serving.some(({ name, entry }) => this.#sent.get(name) !== entry.hash);
    if (serving.length === 0 || !changed) return;
    this.#version++;
    this.#nonce = `${this.#options.id}-${this.#version}`;
    const message = encodeSecretResponse({
      version: String(this.#version),
      nonce: this.#nonce,
      secrets: serving.map(({ name, entry }) => ({ name, material: entry.material })),
    });
    if (!this.#options.send(message)) return;
    this.#sent.clear();
    for (const { name, entry } of serving) {
      this.#sent.set(name, entry.hash);
      this.#options.metrics.pushes.inc({ resource: name });
    }
    this.#options.logger.info({ version: this.#version, secrets: serving.map(({ name, entry }) => ({ name, serial: entry.serial })) }, 'pushed secrets');
  }

  /** Whether a change of `name` concerns this stream. */
  holds(name: string): boolean {
    return this.#names.has(name);
  }

  /** Lets go of every name: the call ended. */
  close(): void {
    for (const name of this.#names) this.#options.subscriptions.release(name);
    this.#names.clear();
  }

  debug(): { id: number; since: string; version: number; secrets: HeldSecret[]; waiting: Array<{ name: string; reason: string }> } {
    const { store } = this.#options;
    const secrets = [...this.#sent.keys()].flatMap((name) => {
      const entry = store.get(name);
      return entry ? [{ name, serial: entry.serial, expiresAt: new Date(entry.expiresAt).toISOString() }] : [];
    });
    const waiting = [...this.#names].filter((name) => !this.#sent.has(name)).map((name) => ({ name, reason: store.problem(name) ?? 'not available yet' }));
    return { id: this.id, since: this.since.toISOString(), version: this.#version, secrets, waiting };
  }

  #subscribe(next: Set<string>): void {
    for (const name of next) if (!this.#names.has(name)) this.#options.subscriptions.acquire(name);
    for (const name of this.#names) {
      if (next.has(name)) continue;
      this.#options.subscriptions.release(name);
      this.#sent.delete(name);
    }
    this.#names = next;
  }

  #nacked(nonce: string, error: string): void {
    // A NACK of an older response was already counted when it came in.
    if (nonce !== this.#nonce) return;
    this.#options.metrics.errors.inc({ reason: 'nack' });
    this.#options.logger.warn({ nonce, error }, 'Envoy rejected the secrets it was sent');
  }
}
