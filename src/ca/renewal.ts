import { backoffDelayMs, type BackoffPolicy } from '../shared/backoff.ts';

/**
 * When to renew a certificate: Istio's rule. The grace period is
 * `graceRatio` of the lifetime (default half), moved by up to ±`jitterRatio`
 * so a fleet started together does not renew together; renewal is due that
 * long before expiry; at least a second after it arrived, even when that
 * moment has passed.
 */
export interface RenewalInput {
  issuedAt: number;
  expiresAt: number;
  now: number;
  graceRatio: number;
  jitterRatio: number;
  /** A number in [0, 1): Math.random in production, fixed in tests. */
  random: number;
}

/** Never sooner than this after a certificate arrives: a grace ratio of 1 must not mean a request loop. */
export const minRenewalDelayMs = 1000;

export function renewalDelayMs(input: RenewalInput): number {
  const ratio = Math.min(1, Math.max(0, input.graceRatio + (2 * input.random - 1) * input.jitterRatio));
  const grace = ratio * (input.expiresAt - input.issuedAt);
  return Math.max(minRenewalDelayMs, input.expiresAt - grace - input.now);
}

/**
 * Backoff after failed CA calls, in the shape of gRPC's connection-backoff
 * spec (src/shared/backoff.ts): a fleet that fails together must not retry
 * together, and a CA that keeps refusing must never see a loop. gRPC's base,
 * multiplier and jitter; the cap stays the CA client's 30 s (gRPC's 120 s is
 * for a channel).
 */
export const caRetryPolicy: BackoffPolicy = { initialMs: 1000, multiplier: 1.6, jitter: 0.2, maxMs: 30_000 };

/** Delay before retry n (0-based) after a failed call; `random` is in [0, 1) (Math.random in production). */
export function retryDelayMs(attempt: number, random: number, policy: BackoffPolicy = caRetryPolicy): number {
  return backoffDelayMs(attempt, random, policy);
}
