/** Time as the agent sees it; tests inject a FakeClock to avoid real sleeps. */
export interface Clock {
  now(): number;
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  setTimeout(callback: () => void, ms: number): Timer;
}

export interface Timer {
  cancel(): void;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms, signal) =>
    new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const timer = setTimeout(done, ms);
      function done() {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }
      function onAbort() {
        clearTimeout(timer);
        reject(signal!.reason);
      }
      signal?.addEventListener('abort', onAbort, { once: true });
    }),
  setTimeout: (callback, ms) => {
    const timer = setTimeout(callback, ms);
    return { cancel: () => clearTimeout(timer) };
  },
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
      throw new Error(`FakeClock.advance(${ms}): ${atInstant} timers fired at ${this.#now} ms without time moving; a timer re-arms itself with no delay (the code under test would spin)`);
    }
    if (fired > this.#maxPerAdvance) {
      throw new Error(`FakeClock.advance(${ms}): more than ${this.#maxPerAdvance} timers fired in one advance, now at ${this.#now} ms; a timer re-arms in a loop`);
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
