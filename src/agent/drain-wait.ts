import type { Clock } from '../shared/clock.ts';
import type { Logger } from '../shared/log.ts';

/** How a shutdown waits once Envoy drains: --terminationDrainDuration, EXIT_ON_ZERO_ACTIVE_CONNECTIONS, MINIMUM_DRAIN_DURATION. */
export interface DrainPolicy {
  durationMs: number;
  /**
   * Stop waiting as soon as no downstream connection is left, after at
   * least `minDurationMs`; `durationMs` stays the upper bound.
   */
  exitOnZeroActiveConnections?: boolean;
  minDurationMs?: number;
  pollMs?: number;
}

export interface DrainWaitOptions {
  clock: Clock;
  logger: Logger;
  /** Aborted: the wait ends at once (a second signal, /quitquitquit). */
  signal: AbortSignal;
  policy: DrainPolicy;
  /** Downstream connections still open on the proxy; undefined when it cannot tell. */
  activeConnections: (signal: AbortSignal) => Promise<number | undefined>;
}

/**
 * Gives open connections their time once Envoy drains, as Istio's agent
 * waits in its terminate step: the whole duration, or with exit-on-zero
 * until none is left (polled after the minimum).
 */
export async function waitOutDrain(options: DrainWaitOptions): Promise<void> {
  if (options.policy.exitOnZeroActiveConnections) return waitForZeroConnections(options);
  await options.clock.sleep(options.policy.durationMs, options.signal).catch(() => undefined);
}

/** Waits the minimum, then polls until no connection is left or the drain duration is over. */
async function waitForZeroConnections(options: DrainWaitOptions): Promise<void> {
  const { clock, signal, logger, policy } = options;
  const deadline = clock.now() + policy.durationMs;
  const pause = (ms: number) => clock.sleep(Math.max(0, Math.min(ms, deadline - clock.now())), signal).then(() => true, () => false);
  if (!(await pause(policy.minDurationMs ?? 0))) return;
  while (clock.now() < deadline) {
    const count = await options.activeConnections(signal);
    if (count === undefined || count === 0) {
      logger.info({ activeConnections: count ?? 'unknown' }, 'no active downstream connections; stopping');
      return;
    }
    logger.info({ activeConnections: count }, 'waiting for active downstream connections to close');
    if (!(await pause(policy.pollMs ?? 1000))) return;
  }
  logger.info({ durationMs: policy.durationMs }, 'drain duration over with connections still open; stopping');
}
