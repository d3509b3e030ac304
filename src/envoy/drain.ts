import type { Logger } from '../shared/log.ts';
import type { AdminClient } from './admin.ts';

export interface DrainListenersOptions {
  admin: AdminClient;
  logger: Logger;
  signal: AbortSignal;
  /** Sidecars drain inbound listeners only, so the app can still call out. */
  inboundOnly: boolean;
  /** For good: the listeners stay open after Envoy's drain time (POST /drain: the app still runs and may call out). */
  skipExit?: boolean;
}

/**
 * Fails health checks and starts the graceful listener drain of whichever
 * Envoy holds admin; no wait. False (and one error line naming what Envoy
 * refused) when either call did not answer 200: Envoy is then not draining.
 */
export async function drainListeners(options: DrainListenersOptions): Promise<boolean> {
  const drainPath = `/drain_listeners?graceful${options.inboundOnly ? '&inboundonly' : ''}${options.skipExit ? '&skip_exit' : ''}`;
  const refused: { path: string; answer: string }[] = [];
  for (const path of ['/healthcheck/fail', drainPath]) {
    const result = await options.admin.post(path, options.signal);
    if (!result.ok || result.status !== 200) refused.push({ path, answer: result.ok ? `${result.status} ${result.body.trim()}` : result.error });
  }
  if (refused.length > 0) options.logger.error({ refused }, 'envoy did not start draining: admin drain call failed');
  return refused.length === 0;
}
