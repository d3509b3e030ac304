/**
 * At most `lines` log lines per `windowMs`: one client naming thousands of
 * bad resources must not write thousands of lines. What was held back is
 * counted and reported with the next line let through; the metrics still
 * count every case.
 */
export class LogBudget {
  readonly #lines: number;
  readonly #windowMs: number;
  readonly #now: () => number;
  #windowStart = -Infinity;
  #used = 0;
  #suppressed = 0;

  constructor(options: { lines: number; windowMs: number; now: () => number }) {
    this.#lines = options.lines;
    this.#windowMs = options.windowMs;
    this.#now = options.now;
  }

  /** Undefined: stay silent. Otherwise log, adding `suppressed` when lines were held back. */
  take(): { suppressed?: number } | undefined {
    const now = this.#now();
    if (now - this.#windowStart >= this.#windowMs) {
      this.#windowStart = now;
      this.#used = 0;
    }
    if (this.#used >= this.#lines) {
      this.#suppressed++;
      return undefined;
    }
    this.#used++;
    const suppressed = this.#suppressed;
    this.#suppressed = 0;
    return suppressed > 0 ? { suppressed } : {};
  }
}
