import type { LastKnownGoodResource } from './wire.ts';
import type { XdsMode } from '../../discovery/wire.ts';

/** What Envoy last accepted for one type on one kind of stream. */
export interface LastKnownGoodType {
  typeUrl: string;
  /** version_info (SotW) or system_version_info (Delta) of the last ACKed response. */
  version: string;
  /** When Envoy ACKed it (ms since the epoch). */
  ackedAt: number;
  /** SotW: the whole response message as the server sent it, in the chunks it came in. */
  response?: Buffer[];
  /** Delta: every resource Envoy holds, by name, after the removals. */
  resources?: Map<string, LastKnownGoodResource>;
  /** The names Envoy last asked for (SotW resource_names, Delta subscribe). */
  names: string[];
}

export type LastKnownGoodChange = { mode: XdsMode; typeUrl: string };

/**
 * The last accepted configuration, per stream kind and type, shared by every
 * stream of the relay. Only responses Envoy ACKed come in here; a NACKed one
 * never does. Memory: one copy of the last ACKed response per SotW type and
 * one copy of each Delta resource, i.e. about one full config.
 */
export class LastKnownGoodConfig {
  readonly #types: Record<XdsMode, Map<string, LastKnownGoodType>> = { sotw: new Map(), delta: new Map() };
  readonly #listeners = new Set<(change: LastKnownGoodChange) => void>();
  /** Every type Envoy asked for on a kind of stream (the types a new Envoy will need), and the names. */
  readonly #asked: Record<XdsMode, Map<string, string[]>> = { sotw: new Map(), delta: new Map() };

  /** A SotW response Envoy ACKed replaces the type's kept one. */
  keepSotw(typeUrl: string, version: string, response: Buffer[], at: number): void {
    this.#types.sotw.set(typeUrl, { typeUrl, version, ackedAt: at, response, names: this.#asked.sotw.get(typeUrl) ?? [] });
    this.#changed('sotw', typeUrl);
  }

  /** A Delta response Envoy ACKed: its resources and removals apply on top (on nothing when `reset`). */
  applyDelta(typeUrl: string, change: { version: string; resources: LastKnownGoodResource[]; removed: string[]; reset: boolean }, at: number): void {
    const previous = this.#types.delta.get(typeUrl);
    const resources = change.reset || !previous?.resources ? new Map<string, LastKnownGoodResource>() : previous.resources;
    for (const resource of change.resources) resources.set(resource.name, resource);
    for (const name of change.removed) resources.delete(name);
    this.#types.delta.set(typeUrl, { typeUrl, version: change.version, ackedAt: at, resources, names: this.#asked.delta.get(typeUrl) ?? [] });
    this.#changed('delta', typeUrl);
  }

  /**
   * Envoy's subscription for a type, kept with the type (not a change worth a
   * write on its own): SotW's resource_names, or the whole Delta subscription
   * ("*" first for a wildcard: delta-subscription.ts). Envoy drops a resource
   * it unsubscribes from, and the server sends no removal for it, so a Delta
   * subscription without the wildcard takes along the kept resources it no
   * longer names; else every name a push ever brought would stay (issue 44).
   */
  subscribe(mode: XdsMode, typeUrl: string, names: string[]): void {
    this.#asked[mode].set(typeUrl, names);
    const entry = this.#types[mode].get(typeUrl);
    if (!entry) return;
    entry.names = names;
    if (mode === 'delta' && !names.includes('*') && entry.resources && this.#dropUnsubscribed(entry.resources, new Set(names))) this.#changed(mode, typeUrl);
  }

  #dropUnsubscribed(resources: Map<string, LastKnownGoodResource>, names: Set<string>): boolean {
    const before = resources.size;
    for (const name of resources.keys()) if (!names.has(name)) resources.delete(name);
    return resources.size !== before;
  }

  /** True when something is kept for every type Envoy has asked for on this kind of stream. */
  covers(mode: XdsMode): boolean {
    const asked = this.#asked[mode].size > 0 ? [...this.#asked[mode].keys()] : [...this.#types[mode].keys()];
    return asked.length > 0 && asked.every((typeUrl) => this.#types[mode].has(typeUrl));
  }

  /** Forgets a type whose latest accepted state the relay could not follow (a response too large to keep). */
  forget(mode: XdsMode, typeUrl: string): void {
    if (this.#types[mode].delete(typeUrl)) this.#changed(mode, typeUrl);
  }

  /** Puts back a whole type, as read from the last-known-good file at start. */
  restore(mode: XdsMode, entry: LastKnownGoodType): void {
    this.#types[mode].set(entry.typeUrl, entry);
    this.#asked[mode].set(entry.typeUrl, entry.names);
  }

  get(mode: XdsMode, typeUrl: string): LastKnownGoodType | undefined {
    return this.#types[mode].get(typeUrl);
  }

  types(mode: XdsMode): LastKnownGoodType[] {
    return [...this.#types[mode].values()];
  }

  has(mode: XdsMode): boolean {
    return this.#types[mode].size > 0;
  }

  onChange(listener: (change: LastKnownGoodChange) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #changed(mode: XdsMode, typeUrl: string): void {
    for (const listener of this.#listeners) listener({ mode, typeUrl });
  }

  /** Sizes, versions and how many names Envoy subscribes to, for /debug/xds. */
  summary(): Record<XdsMode, Record<string, { version: string; ackedAt: string; names: number; bytes: number; resources?: number }>> {
    const describe = (entry: LastKnownGoodType) => ({
      version: entry.version,
      names: entry.names.length,
      ackedAt: new Date(entry.ackedAt).toISOString(),
      bytes: [...(entry.response ?? []), ...[...(entry.resources?.values() ?? [])].map((resource) => resource.bytes)].reduce(
        (sum, bytes) => sum + bytes.length,
        0,
      ),
      ...(entry.resources ? { resources: entry.resources.size } : {}),
    });
    const of = (mode: XdsMode) => Object.fromEntries(this.types(mode).map((entry) => [entry.typeUrl, describe(entry)]));
    return { sotw: of('sotw'), delta: of('delta') };
  }
}
