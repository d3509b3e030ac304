import type { LastKnownGoodConfig } from '../last-known-good/config.ts';

/**
 * Whether a new Envoy would get config now: the discovery server was
 * reachable at the last dial (or not tried yet), or something is kept
 * for every type Envoy asked for. The restart gate reads it.
 */
export class ConfigGate {
  readonly #lastKnownGood: LastKnownGoodConfig;
  readonly #listeners = new Set<(open: boolean) => void>();
  /** The last dial's outcome; unknown (undefined) until the first. */
  #reachable: boolean | undefined;
  #open = true;

  constructor(lastKnownGood: LastKnownGoodConfig) {
    this.#lastKnownGood = lastKnownGood;
    lastKnownGood.onChange(() => this.#mayChange());
  }

  get open(): boolean {
    return this.#reachable !== false || this.#lastKnownGood.covers('sotw') || this.#lastKnownGood.covers('delta');
  }

  /** True when the last dial (any stream's) failed. */
  get lastDialFailed(): boolean {
    return this.#reachable === false;
  }

  /** Told every dial's outcome. */
  dialed(ok: boolean): void {
    this.#reachable = ok;
    this.#mayChange();
  }

  /** Calls `listener` whenever `open` changes. */
  onChange(listener: (open: boolean) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #mayChange(): void {
    const open = this.open;
    if (open === this.#open) return;
    this.#open = open;
    for (const listener of this.#listeners) listener(open);
  }
}
