import type { TimerHost } from '../../src/shared/clock.ts';

/** Timers a test fires by hand (a TimerHost for boundedTimer): each pending one with the delay it was armed with. */
export function handTimers() {
  let now = 0;
  const pending = new Map<number, { at: number; ms: number; callback: () => void }>();
  let next = 0;
  const host: TimerHost = {
    setTimeout: (callback, ms) => (pending.set(++next, { at: now + ms, ms, callback }), next),
    clearTimeout: (handle) => void pending.delete(handle as number),
    monotonicNow: () => now,
  };
  const advance = (ms: number) => {
    now += ms;
    for (const [id, timer] of pending) if (timer.at <= now) (pending.delete(id), timer.callback());
  };
  return { host, advance, delays: () => [...pending.values()].map((timer) => timer.ms) };
}
