import type { Metric } from './metric.ts';

/** The metrics one endpoint exposes, in registration order; names are unique. */
export class Registry {
  readonly #metrics = new Map<string, Metric<string>>();

  register(metric: Metric<string>): void {
    if (this.#metrics.has(metric.name)) throw new Error(`a metric named ${metric.name} is already registered`);
    this.#metrics.set(metric.name, metric);
  }

  getSingleMetric(name: string): Metric<string> | undefined {
    return this.#metrics.get(name);
  }

  /** The exposition text of every metric, each collected first. */
  async metrics(): Promise<string> {
    return (await Promise.all([...this.#metrics.values()].map((metric) => metric.text()))).join('\n');
  }

  async getSingleMetricAsString(name: string): Promise<string> {
    const metric = this.#metrics.get(name);
    return metric ? metric.text() : '';
  }

  async getMetricsAsJSON(): Promise<Awaited<ReturnType<Metric<string>['get']>>[]> {
    return Promise.all([...this.#metrics.values()].map((metric) => metric.get()));
  }
}
