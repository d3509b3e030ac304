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

  constructor(start = 0) {
    this.#now = start;
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
    for (;;) {
      const due = this.#timers
        .filter((timer) => !timer.cancelled && timer.at <= target)
        .sort((a, b) => a.at - b.at)[0];
      if (!due) break;
      this.#timers.splice(this.#timers.indexOf(due), 1);
      this.#now = due.at;
      due.callback();
    }
    this.#now = target;
  }

  /** Timers still waiting to fire. */
  get pending(): number {
    return this.#timers.filter((timer) => !timer.cancelled).length;
  }
}
