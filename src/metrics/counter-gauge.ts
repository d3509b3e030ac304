import { Metric, splitArgs, type Args, type EmitSample, type MetricOptions } from './metric.ts';

/** Series values by label key; a metric without labels shows 0 before its first change. */
abstract class ValueMetric<L extends string> extends Metric<L> {
  protected readonly values = new Map<string, number>();

  constructor(options: MetricOptions<L, never>) {
    super(options);
    if (this.labelNames.length === 0) this.values.set(this.keyOf({}), 0);
  }

  protected add(args: Args<L>, sign: 1 | -1): void {
    const [labels, value] = splitArgs(args, 1);
    const key = this.keyOf(labels);
    this.values.set(key, (this.values.get(key) ?? 0) + sign * value);
  }

  protected eachSample(emit: EmitSample): void {
    this.values.forEach((value, key) => emit('', key, value));
  }

  reset(): void {
    this.values.clear();
    if (this.labelNames.length === 0) this.values.set(this.keyOf({}), 0);
  }
}

/** Only goes up; `_total` names are for counters alone. */
export class Counter<L extends string = string> extends ValueMetric<L> {
  readonly type = 'counter';

  constructor(options: MetricOptions<L, Counter<L>>) {
    super(options as MetricOptions<L, never>);
  }

  inc(...args: Args<L>): void {
    const [, value] = splitArgs(args, 1);
    if (!(value >= 0)) throw new Error(`${this.name}: a counter cannot go down (${value})`);
    this.add(args, 1);
  }
}

/** A value that goes up and down, or is computed on scrape (`collect`). */
export class Gauge<L extends string = string> extends ValueMetric<L> {
  readonly type = 'gauge';

  constructor(options: MetricOptions<L, Gauge<L>>) {
    super(options as MetricOptions<L, never>);
  }

  set(...args: [value: number] | [labels: Partial<Record<L, string | number>>, value: number]): void {
    const [labels, value] = args.length === 1 ? [{}, args[0]] : args;
    this.values.set(this.keyOf(labels), value);
  }

  inc(...args: Args<L>): void {
    this.add(args, 1);
  }

  dec(...args: Args<L>): void {
    this.add(args, -1);
  }
}
