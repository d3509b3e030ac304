import { timeoutSignal, type Clock } from '../shared/clock.ts';

export interface WaitReadyOptions {
  /** One probe: undefined when ready, else why not. */
  check: () => Promise<string | undefined>;
  clock: Clock;
  periodMs: number;
  timeoutMs: number;
}

export type WaitResult = { ready: true } | { ready: false; last: string };

/** Probes every `periodMs` until ready or `timeoutMs` has passed; one last probe at the deadline. */
export async function waitReady(options: WaitReadyOptions): Promise<WaitResult> {
  const { clock } = options;
  const deadline = clock.now() + options.timeoutMs;
  for (;;) {
    const reason = await options.check();
    if (reason === undefined) return { ready: true };
    const left = deadline - clock.now();
    if (left <= 0) return { ready: false, last: reason };
    await clock.sleep(Math.min(options.periodMs, left));
  }
}

/** A probe of a readiness URL: 200 is ready; anything else, or no answer in time, says why not. */
export function urlCheck(url: string, requestTimeoutMs: number): () => Promise<string | undefined> {
  return async () => {
    try {
      const response = await fetch(url, { signal: timeoutSignal(requestTimeoutMs) });
      const body = (await response.text()).trim();
      return response.status === 200 ? undefined : `HTTP ${response.status}${body ? `: ${body}` : ''}`;
    } catch (error) {
      const cause = (error as Error).cause;
      return cause ? String(cause) : String(error);
    }
  };
}
