import { maxTimerMs } from './duration.ts';

/** Time as the agent sees it; tests inject a FakeClock to avoid real sleeps. */
export interface Clock {
  now(): number;
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  setTimeout(callback: () => void, ms: number): Timer;
}

export interface Timer {
  cancel(): void;
}

/**
 * Node runs a timer asked for more than 2^31-1 ms (24.8 days) after 1 ms,
 * with only a warning: a wait re-armed from a year-long certificate then
 * spins. Every timer of the product goes through this file, which waits in
 * chunks no longer than this and re-arms until the whole delay has passed.
 */
export const maxTimerChunkMs = maxTimerMs;

/** The host timers the bounded ones are built on; tests pass fakes. */
export interface TimerHost {
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
  /** Monotonic milliseconds: chunks are counted on it, so a wall-clock jump neither ends nor stretches a wait. */
  monotonicNow(): number;
  unref?(handle: unknown): void;
}

const nodeHost: TimerHost = {
  setTimeout: (callback, ms) => setTimeout(callback, ms),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
  monotonicNow: () => performance.now(),
  unref: (handle) => void (handle as NodeJS.Timeout).unref(),
};

/** A delay Node can take: NaN and negatives run at once, as Node does; Infinity waits forever (in chunks). */
function sanitize(ms: number): number {
  return Number.isNaN(ms) || ms < 0 ? 0 : ms;
}

/**
 * Runs `callback` once after `ms`, however long: a delay past what Node
 * can arm is waited for in chunks. `unref`: the wait does not keep the
 * process alive.
 */
export function boundedTimer(callback: () => void, ms: number, options: { unref?: boolean; host?: TimerHost } = {}): Timer {
  const host = options.host ?? nodeHost;
  const deadline = host.monotonicNow() + sanitize(ms);
  let handle: unknown;
  let cancelled = false;
  const arm = () => {
    const left = Math.max(0, deadline - host.monotonicNow());
    handle = host.setTimeout(left > maxTimerChunkMs ? arm : fire, Math.min(left, maxTimerChunkMs));
    if (options.unref) host.unref?.(handle);
  };
  const fire = () => {
    if (!cancelled) callback();
  };
  arm();
  return { cancel: () => ((cancelled = true), host.clearTimeout(handle)) };
}

/** Runs `callback` every `ms` (bounded as boundedTimer) until cancelled. */
export function boundedInterval(callback: () => void, ms: number, options: { unref?: boolean; host?: TimerHost } = {}): Timer {
  let current: Timer | undefined;
  let cancelled = false;
  const next = () => {
    current = boundedTimer(() => {
      if (cancelled) return;
      next();
      callback();
    }, ms, options);
  };
  next();
  return { cancel: () => ((cancelled = true), current?.cancel()) };
}

/** AbortSignal.timeout with the bound: aborts with a TimeoutError after `ms`, and never keeps the process alive. */
export function timeoutSignal(ms: number): AbortSignal {
  const controller = new AbortController();
  boundedTimer(() => controller.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError')), ms, { unref: true });
  return controller.signal;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms, signal) =>
    new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const timer = boundedTimer(done, ms);
      function done() {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }
      function onAbort() {
        timer.cancel();
        reject(signal!.reason);
      }
      signal?.addEventListener('abort', onAbort, { once: true });
    }),
  setTimeout: (callback, ms) => boundedTimer(callback, ms),
};

/** A clock that moves only when told to, for table tests. */
export class FakeClock implements Clock {
  #now: number;
  #timers: { at: number; callback: () => void; cancelled: boolean }[] = [];
  readonly #maxPerAdvance: number;
  readonly #maxPerInstant: number;

  constructor(start = 0, bounds: FakeClockBounds = {}) {
    this.#now = start;
    this.#maxPerAdvance = bounds.maxTimersPerAdvance ?? 100_000;
    this.#maxPerInstant = bounds.maxTimersPerInstant ?? 1000;
  }

  now(): number {
    return this.#now;
  }

  /** Like systemClock's: an abort ends the sleep at once (rejecting), as code under test relies on. */
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const onAbort = () => (timer.cancel(), reject(signal!.reason));
      const timer = this.setTimeout(() => (signal?.removeEventListener('abort', onAbort), resolve()), ms);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  setTimeout(callback: () => void, ms: number): Timer {
    const timer = { at: this.#now + ms, callback, cancelled: false };
    this.#timers.push(timer);
    return { cancel: () => void (timer.cancelled = true) };
  }

  /** Moves time forward, firing due timers in order. */
  advance(ms: number): void {
    const target = this.#now + ms;
    let fired = 0;
    let atInstant = 0;
    for (;;) {
      const due = this.#timers
        .filter((timer) => !timer.cancelled && timer.at <= target)
        .sort((a, b) => a.at - b.at)[0];
      if (!due) break;
      this.#timers.splice(this.#timers.indexOf(due), 1);
      atInstant = due.at === this.#now ? atInstant + 1 : 1;
      this.#now = due.at;
      this.#checkBounds(ms, ++fired, atInstant);
      due.callback();
    }
    this.#now = target;
  }

  #checkBounds(ms: number, fired: number, atInstant: number): void {
    if (atInstant > this.#maxPerInstant) {
      throw new Error(
        `FakeClock.advance(${ms}): ${atInstant} timers fired at ${this.#now} ms without time moving; a timer re-arms itself with no delay (the code ` +
          `under test would spin)`,
      );
    }
    if (fired > this.#maxPerAdvance) {
      throw new Error(
        `FakeClock.advance(${ms}): more than ${this.#maxPerAdvance} timers fired in one advance, now at ${this.#now} ms; a timer re-arms in a loop`,
      );
    }
  }

  /** Timers still waiting to fire. */
  get pending(): number {
    return this.#timers.filter((timer) => !timer.cancelled).length;
  }
}

/**
 * How many timers one FakeClock.advance may fire: in all, and at one instant
 * without time moving. A timer that re-arms itself with no delay would
 * otherwise loop inside advance() forever, a synchronous spin that no test
 * timeout can stop; past a bound, advance throws and the test fails by name.
 */
export interface FakeClockBounds {
  maxTimersPerAdvance?: number;
  maxTimersPerInstant?: number;
}
