import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';

/**
 * Collects JSON lines from a stream and lets a test wait for one that
 * matches. Waits are bounded by a timeout and fail with what was seen; once
 * the stream has ended they fail at once, saying why (`whyEnded`: e.g. the
 * process's exit and stderr), instead of waiting out a line that cannot come.
 */
export class LineLog<T = Record<string, unknown>> {
  readonly entries: T[] = [];
  readonly raw: string[] = [];
  #waiters: { match: (entry: T) => boolean; resolve: (entry: T) => void; reject: (error: Error) => void; what: string }[] = [];
  #ended = false;
  readonly #whyEnded: () => string;

  constructor(stream: Readable, whyEnded: () => string = () => 'the stream ended') {
    this.#whyEnded = whyEnded;
    createInterface({ input: stream, crlfDelay: Infinity }).on('line', (line) => this.#add(line)).on('close', () => this.#end());
  }

  #end(): void {
    this.#ended = true;
    for (const waiter of this.#waiters) waiter.reject(this.#endedError(waiter.what));
    this.#waiters = [];
  }

  #endedError(what: string): Error {
    return new Error(`no more output while waiting for ${what}: ${this.#whyEnded()}; last lines:\n${this.raw.slice(-15).join('\n')}`);
  }

  #add(line: string): void {
    this.raw.push(line);
    let entry: T;
    try {
      entry = JSON.parse(line) as T;
    } catch {
      return;
    }
    this.entries.push(entry);
    this.#waiters = this.#waiters.filter((waiter) => {
      if (!waiter.match(entry)) return true;
      waiter.resolve(entry);
      return false;
    });
  }

  find(match: (entry: T) => boolean): T | undefined {
    return this.entries.find(match);
  }

  /** Resolves with the first matching entry at index `from` or later, arrived or to come. */
  waitFor(match: (entry: T) => boolean, timeoutMs = 15_000, what = 'a matching log line', from = 0): Promise<T> {
    const found = this.entries.slice(from).find(match);
    if (found) return Promise.resolve(found);
    if (this.#ended) return Promise.reject(this.#endedError(what));
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}; last lines:\n${this.raw.slice(-15).join('\n')}`));
      }, timeoutMs);
      this.#waiters.push({ match, what, resolve: (entry) => (clearTimeout(timer), resolve(entry)), reject: (error) => (clearTimeout(timer), reject(error)) });
    });
  }
}
