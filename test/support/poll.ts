/**
 * One way for tests to wait on something that only polling can see (an HTTP
 * answer, a file, a counter): probe, wait, probe again, and on timeout fail
 * naming what was awaited and the last thing seen.
 */
export interface PollOptions<T> {
  /** What is awaited, for the error: "a 200 through Envoy". */
  what: string;
  timeoutMs?: number;
  intervalMs?: number;
  /** When a probed value is the one awaited; by default, when it is truthy. */
  accept?: (value: T) => boolean;
  /** How the last value reads in the error; by default JSON. */
  show?: (value: T) => string;
}

/** Probes until `accept` holds and returns that value; a probe that throws counts as not yet. */
export async function pollUntil<T>(probe: () => T | Promise<T>, options: PollOptions<T>): Promise<T> {
  const { what, timeoutMs = 15_000, intervalMs = 100, accept = Boolean, show = (value: T) => JSON.stringify(value) } = options;
  const deadline = performance.now() + timeoutMs;
  let last = 'nothing yet';
  for (;;) {
    try {
      const value = await probe();
      if (accept(value)) return value;
      last = show(value);
    } catch (error) {
      last = `threw ${error instanceof Error ? error.message : String(error)}`;
    }
    if (performance.now() >= deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}; last: ${last}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/** pollUntil for a yes/no check, which most waits are. */
export async function waitUntil(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  await pollUntil(check, { what, timeoutMs, show: String });
}
