import { Metric, type EmitSample, type MetricOptions } from './metric.ts';

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

  protected eachSample(emit: EmitSample): void {
    for (const [key, series] of this.#series) {
      let cumulative = 0;
      this.#buckets.forEach((bound, i) => emit('_bucket', key, (cumulative += series.counts[i]!), bound));
      emit('_bucket', key, series.count, '+Inf');
      emit('_sum', key, series.sum);
      emit('_count', key, series.count);
    }
  }

  reset(): void {
    this.#series.clear();
  }
}
