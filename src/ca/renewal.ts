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

/** Delay before retry n (0-based) after a failed call: 1 s doubling, at most 30 s. */
export function retryDelayMs(attempt: number): number {
  return Math.min(30_000, 1000 * 2 ** Math.min(attempt, 5));
}
