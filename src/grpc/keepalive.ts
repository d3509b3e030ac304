import type { Http2Session } from 'node:http2';
import { boundedInterval, boundedTimer, type Timer } from '../shared/clock.ts';

export interface KeepaliveOptions {
  intervalMs: number;
  timeoutMs: number;
}

/** As Istio's agent on both of its legs: ping every 30 s, give up after 10 s. */
export const keepaliveDefaults: KeepaliveOptions = { intervalMs: 30_000, timeoutMs: 10_000 };

/**
 * Pings the peer every interval; a ping not answered in time destroys the
 * session, which ends its streams. A peer that vanished without closing the
 * connection (a frozen VM, a dropped route) is then noticed in seconds.
 */
export function keepAlive(session: Http2Session, options: KeepaliveOptions): void {
  let deadline: Timer | undefined;
  const interval = boundedInterval(() => {
    if (session.destroyed || session.closed || deadline) return;
    deadline = boundedTimer(() => session.destroy(new Error(`keepalive: no answer to a ping within ${options.timeoutMs} ms`)), options.timeoutMs, {
      unref: true,
    });
    session.ping(() => {
      deadline?.cancel();
      deadline = undefined;
    });
  }, options.intervalMs, { unref: true });
  session.once('close', () => {
    interval.cancel();
    deadline?.cancel();
  });
}
