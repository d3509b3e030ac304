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

/** The delay before retry `attempt` (0-based), jittered by `random` in [0, 1). */
export function backoffDelayMs(attempt: number, random: number, policy: BackoffPolicy): number {
  // The exponent is capped before it overflows: 1.6^40 is far past any cap.
  const base = Math.min(policy.maxMs, policy.initialMs * policy.multiplier ** Math.min(Math.max(0, attempt), 40));
  return Math.max(0, Math.round(base * (1 + policy.jitter * (2 * random - 1))));
}

/** The delays of one run of retries; `reset()` after a success. */
export class Backoff {
  readonly #policy: BackoffPolicy;
  readonly #random: RandomSource;
  #attempt = 0;

  constructor(policy: BackoffPolicy, random: RandomSource = Math.random) {
    this.#policy = policy;
    this.#random = random;
  }

  /** The next delay (ms), jittered; the base steps towards the cap. */
  next(): number {
    return backoffDelayMs(this.#attempt++, this.#random(), this.#policy);
  }

  reset(): void {
    this.#attempt = 0;
  }
}
