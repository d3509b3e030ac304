import type { LastKnownGoodConfig } from '../last-known-good/config.ts';

/**
 * Whether a new Envoy would get config now: the discovery server was
 * reachable at the last dial, or something is kept for every type Envoy
 * asked for. Until a dial first reaches the server, no Envoy got config
 * through the relay, so a new one loses nothing: available then too (an
 * agent that starts while the server is away, or whose custom bootstrap
 * does not use the relay, never holds a rotation for it). The agent's
 * restart gate reads it.
 */
export class ConfigAvailability {
  readonly #lastKnownGood: LastKnownGoodConfig;
  readonly #listeners = new Set<(available: boolean) => void>();
  /** The last dial's outcome; unknown (undefined) until the first. */
  #reachable: boolean | undefined;
  /** Whether some dial has reached the server. */
  #reached = false;
  #available = true;

  constructor(lastKnownGood: LastKnownGoodConfig) {
    this.#lastKnownGood = lastKnownGood;
    lastKnownGood.onChange(() => this.#mayChange());
  }

  /** True when a new Envoy would get config. */
  get available(): boolean {
    return !this.#reached || this.#reachable !== false || this.#lastKnownGood.covers('sotw') || this.#lastKnownGood.covers('delta');
  }

  /** True when the last dial (any stream's) failed. */
  get lastDialFailed(): boolean {
    return this.#reachable === false;
  }

  /** Told every dial's outcome. */
  dialed(ok: boolean): void {
    this.#reachable = ok;
    this.#reached ||= ok;
    this.#mayChange();
  }

  /** Calls `listener` whenever `available` changes. */
  onChange(listener: (available: boolean) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #mayChange(): void {
    const available = this.available;
    if (available === this.#available) return;
    this.#available = available;
    for (const listener of this.#listeners) listener(available);
  }
}
