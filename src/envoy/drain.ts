import type { Clock } from '../shared/clock.ts';
import type { Logger } from '../shared/log.ts';
import type { AdminClient } from './admin.ts';

export interface DrainOptions {
  admin: AdminClient;
  clock: Clock;
  logger: Logger;
  signal: AbortSignal;
  durationMs: number;
  /** Sidecars drain inbound listeners only, so the app can still call out. */
  inboundOnly: boolean;
}

/**
 * Graceful termination: fail health checks, drain listeners, then wait the
 * drain duration. Aborting the signal cuts the wait short.
 */
export async function drainEnvoy(options: DrainOptions): Promise<void> {
  const { admin, logger, signal } = options;
  const drainPath = `/drain_listeners?graceful${options.inboundOnly ? '&inboundonly' : ''}`;
  for (const path of ['/healthcheck/fail', drainPath]) {
    const result = await admin.post(path, signal);
    if (!result.ok || result.status !== 200) logger.warn({ path, result }, 'admin drain call failed');
  }
  logger.info({ durationMs: options.durationMs }, 'draining listeners');
  await options.clock.sleep(options.durationMs, signal).catch(() => undefined);
}
