import type { Sample } from './exposition.ts';
import { Metric, type MetricOptions } from './metric.ts';

interface Series { counts: number[]; sum: number; count: number }

/** Observations counted into fixed buckets (cumulative on exposition), with their sum and count. */
export class Histogram<L extends string = string> extends Metric<L> {
  readonly type = 'histogram';
  readonly #buckets: readonly number[];
  readonly #series = new Map<string, Series>();

  constructor(options: MetricOptions<L, Histogram<L>> & { buckets: readonly number[] }) {
    super(options as MetricOptions<L, never>);
    this.#buckets = [...options.buckets].sort((a, b) => a - b);
  }

  observe(labels: Partial<Record<L, string | number>>, value: number): void {
    const key = this.keyOf(labels);
    let series = this.#series.get(key);
    if (!series) this.#series.set(key, (series = { counts: this.#buckets.map(() => 0), sum: 0, count: 0 }));
    const index = this.#buckets.findIndex((bound) => value <= bound);
    if (index >= 0) series.counts[index]!++;
    series.sum += value;
    series.count++;
  }

  protected samples(): Sample[] {
    return [...this.#series].flatMap(([key, series]) => {
      const labels = this.labelsOf(key);
      let cumulative = 0;
      const buckets = this.#buckets.map((bound, i) => ({
        name: `${this.name}_bucket`,
        labels: { ...labels, le: bound },
        value: (cumulative += series.counts[i]!),
      }));
      return [
        ...buckets,
        { name: `${this.name}_bucket`, labels: { ...labels, le: '+Inf' }, value: series.count },
        { name: `${this.name}_sum`, labels, value: series.sum },
        { name: `${this.name}_count`, labels, value: series.count },
      ];
    });
  }

  reset(): void {
    this.#series.clear();
  }
}
