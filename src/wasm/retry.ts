import { Backoff, type BackoffPolicy, type RandomSource } from '../shared/backoff.ts';
import type { Clock } from '../shared/clock.ts';
import { spokePlainHttp, type HttpAnswer } from './http-get.ts';

/** As Istio's Wasm fetcher: 500 ms, doubling. */
export const fetchBackoff: BackoffPolicy = { initialMs: 500, multiplier: 2, jitter: 0.2, maxMs: 10_000 };

export interface RetryOptions {
  /** Attempts in all (WASM_HTTP_REQUEST_MAX_RETRIES). */
  attempts: number;
  clock: Clock;
  random?: RandomSource;
  /** Past this instant (clock ms) no retry starts. */
  deadline: number;
}

/** 5xx answers are worth another try, except those that will not change. */
export const retryableStatus = (status: number) => status >= 500 && status !== 501 && status !== 505 && status !== 511;

/**
 * Runs `get` until it answers with a status that is not retryable, or the
 * attempts or the deadline run out. Errors (refused connections, SSRF
 * refusals, timeouts) are retried like a 5xx, as Istio's agent does.
 */
export async function withRetries(get: () => Promise<HttpAnswer>, options: RetryOptions): Promise<HttpAnswer> {
  const backoff = new Backoff(fetchBackoff, options.random);
  let last: Error | undefined;
  let attempt = 0;
  while (attempt < options.attempts) {
    attempt++;
    try {
      const answer = await get();
      if (!retryableStatus(answer.status)) return answer;
      last = new Error(`${answer.url}: HTTP ${answer.status}`);
    } catch (error) {
      // A registry speaking plain HTTP will not start speaking TLS: the caller falls back at once.
      if (spokePlainHttp(error)) throw error;
      last = error as Error;
    }
    const delay = backoff.next();
    if (attempt === options.attempts || options.clock.now() + delay > options.deadline) break;
    await options.clock.sleep(delay);
  }
  const reason = last?.message ?? 'no attempt';
  throw new Error(`failed after ${attempt} attempt(s): ${reason}`);
}
