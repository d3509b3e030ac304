/**
 * Exponential backoff with jitter, in the shape of gRPC's connection-backoff
 * spec (base, multiplier, jitter, cap). The jitter spreads a fleet that
 * failed together: without it, every agent retries at the same moments and
 * the recovering server meets synchronised waves.
 */
export interface BackoffPolicy {
  /** The first delay, before jitter. */
  initialMs: number;
  /** Each delay is the previous one times this, up to maxMs. */
  multiplier: number;
  /** Each delay is moved by up to ± this fraction of itself (0 ≤ jitter < 1). */
  jitter: number;
  /** The largest delay before jitter. */
  maxMs: number;
}

/** A number in [0, 1): Math.random in production, scripted in tests. */
export type RandomSource = () => number;

/** The delays of one run of retries; `reset()` after a success. */
export class Backoff {
  readonly #policy: BackoffPolicy;
  readonly #random: RandomSource;
  #current: number;

  constructor(policy: BackoffPolicy, random: RandomSource = Math.random) {
    this.#policy = policy;
    this.#random = random;
    this.#current = policy.initialMs;
  }

  /** The next delay (ms), jittered, then steps the base towards the cap. */
  next(): number {
    const { jitter, multiplier, maxMs } = this.#policy;
    const base = this.#current;
    this.#current = Math.min(base * multiplier, maxMs);
    return Math.max(0, Math.round(base * (1 + jitter * (2 * this.#random() - 1))));
  }

  reset(): void {
    this.#current = this.#policy.initialMs;
  }
}
