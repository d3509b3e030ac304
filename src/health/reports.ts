import type { HealthReport, HealthReportSource } from '../discovery/consumers.ts';

/** The last health report and who hears the next: one listener per relayed stream, removed when it ends. */
export class HealthReports implements HealthReportSource {
  #last: HealthReport | undefined;
  readonly #listeners = new Set<(report: HealthReport) => void>();

  current(): HealthReport | undefined {
    return this.#last;
  }

  subscribe(listener: (report: HealthReport) => void): () => void {
    this.#listeners.add(listener);
    return () => void this.#listeners.delete(listener);
  }

  publish(report: HealthReport): void {
    this.#last = report;
    for (const listener of this.#listeners) listener(report);
  }

  /** How many streams listen (tests: none left once they ended). */
  get listeners(): number {
    return this.#listeners.size;
  }
}
