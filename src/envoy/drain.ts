import type { Clock } from '../shared/clock.ts';
import type { Logger } from '../shared/log.ts';
import { activeConnections } from './active-connections.ts';
import type { AdminClient } from './admin.ts';

export interface DrainOptions {
  admin: AdminClient;
  clock: Clock;
  logger: Logger;
  signal: AbortSignal;
  durationMs: number;
  /** Sidecars drain inbound listeners only, so the app can still call out. */
  inboundOnly: boolean;
  /**
   * Stop waiting as soon as no downstream connection is left (Istio's
   * EXIT_ON_ZERO_ACTIVE_CONNECTIONS), after at least `minDurationMs`;
   * `durationMs` stays the upper bound.
   */
  exitOnZeroActiveConnections?: boolean;
  minDurationMs?: number;
  pollMs?: number;
  /** Listeners of the agent's own (Prometheus, readiness) that do not hold the drain up. */
  ignoredPorts?: readonly number[];
}

/**
 * Graceful termination: fail health checks, drain listeners, then wait the
 * drain duration. Aborting the signal cuts the wait short. True when Envoy
 * took the drain calls.
 */
export async function drainEnvoy(options: DrainOptions): Promise<boolean> {
  const { logger, signal } = options;
  // Already told to hurry (/quitquitquit, a second signal): stop without the admin calls.
  if (signal.aborted) return false;
  // Envoy's refusal is logged by drainListeners; the wait still gives open connections their time.
  const started = await drainListeners(options);
  if (started) logger.info({ durationMs: options.durationMs, exitOnZeroActiveConnections: Boolean(options.exitOnZeroActiveConnections) }, 'draining listeners');
  if (options.exitOnZeroActiveConnections) await waitForZeroConnections(options);
  else await options.clock.sleep(options.durationMs, signal).catch(() => undefined);
  return started;
}

/**
 * Fails health checks and starts the graceful listener drain of whichever
 * Envoy holds admin; no wait. False (and one error line naming what Envoy
 * refused) when either call did not answer 200: Envoy is then not draining.
 */
export async function drainListeners(options: Pick<DrainOptions, 'admin' | 'logger' | 'signal' | 'inboundOnly'> & { skipExit?: boolean }): Promise<boolean> {
  // skip_exit: the listeners stay open after Envoy's drain time (POST /drain: the app still runs and may call out).
  const drainPath = `/drain_listeners?graceful${options.inboundOnly ? '&inboundonly' : ''}${options.skipExit ? '&skip_exit' : ''}`;
  const refused: { path: string; answer: string }[] = [];
  for (const path of ['/healthcheck/fail', drainPath]) {
    const result = await options.admin.post(path, options.signal);
    if (!result.ok || result.status !== 200) refused.push({ path, answer: result.ok ? `${result.status} ${result.body.trim()}` : result.error });
  }
  if (refused.length > 0) options.logger.error({ refused }, 'envoy did not start draining: admin drain call failed');
  return refused.length === 0;
}

/** Waits the minimum, then polls until no connection is left or the drain duration is over. */
async function waitForZeroConnections(options: DrainOptions): Promise<void> {
  const { clock, signal, logger } = options;
  const deadline = clock.now() + options.durationMs;
  const pause = (ms: number) => clock.sleep(Math.max(0, Math.min(ms, deadline - clock.now())), signal).then(() => true, () => false);
  if (!(await pause(options.minDurationMs ?? 0))) return;
  while (clock.now() < deadline) {
    const count = await activeConnections(options.admin, options.ignoredPorts ?? [], signal);
    if (count === undefined || count === 0) {
      logger.info({ activeConnections: count ?? 'unknown' }, 'no active downstream connections; stopping');
      return;
    }
    logger.info({ activeConnections: count }, 'waiting for active downstream connections to close');
    if (!(await pause(options.pollMs ?? 1000))) return;
  }
  logger.info({ durationMs: options.durationMs }, 'drain duration over with connections still open; stopping');
}
