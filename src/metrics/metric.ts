import type { Family, Labels, MetricType, Sample } from './exposition.ts';

export interface MetricOptions<L extends string, Self = unknown> {
  name: string;
  help: string;
  labelNames?: readonly L[];
  /** Registries to add the metric to (each keeps a reference; scrape reads it). */
  registers?: readonly { register(metric: Metric<string>): void }[];
  /** Called on every scrape before the values are read: gauges computed on demand. */
  collect?: (this: Self) => void | Promise<void>;
}

const metricName = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const labelName = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

/**
 * What counters, gauges and histograms share: a name, help, a fixed set of
 * label names, and one series per label-value combination.
 */
export abstract class Metric<L extends string> {
  readonly name: string;
  readonly help: string;
  readonly labelNames: readonly L[];
  abstract readonly type: MetricType;
  readonly #collect: (() => void | Promise<void>) | undefined;

  constructor(options: MetricOptions<L, never>) {
    if (!metricName.test(options.name)) throw new Error(`invalid metric name: ${options.name}`);
    const bad = (options.labelNames ?? []).find((name) => !labelName.test(name) || name === 'le');
    if (bad !== undefined) throw new Error(`${options.name}: invalid label name: ${bad}`);
    this.name = options.name;
    this.help = options.help;
    this.labelNames = options.labelNames ?? [];
    this.#collect = options.collect as (() => void | Promise<void>) | undefined;
    for (const registry of options.registers ?? []) registry.register(this as Metric<string>);
  }

  /** The series key of a label set: its values in label-name order; throws on a label not declared. */
  protected keyOf(labels: Partial<Record<L, string | number>>): string {
    for (const name of Object.keys(labels)) {
      if (!this.labelNames.includes(name as L)) throw new Error(`${this.name}: label ${name} is not one of ${this.labelNames.join(', ') || '(none)'}`);
    }
    return JSON.stringify(this.labelNames.map((name) => (labels[name] === undefined ? '' : String(labels[name]))));
  }

  /** The label set of a series key, without the labels left unset. */
  protected labelsOf(key: string): Labels {
    const values = JSON.parse(key) as string[];
    return Object.fromEntries(this.labelNames.flatMap((name, i) => (values[i] === '' ? [] : [[name, values[i]!]])));
  }

  /** Runs `collect`, then reads the family as it is now. */
  async family(): Promise<Family> {
    await this.#collect?.call(this);
    return { name: this.name, help: this.help, type: this.type, samples: this.samples() };
  }

  /** prom-client's `get()`: the family with label sets and values (tests read it). */
  async get(): Promise<{ name: string; help: string; type: MetricType; values: { labels: Labels; value: number; metricName: string }[] }> {
    const family = await this.family();
    return {
      name: family.name,
      help: family.help,
      type: family.type,
      values: family.samples.map((s) => ({ labels: s.labels, value: s.value, metricName: s.name })),
    };
  }

  protected abstract samples(): Sample[];

  /** Forgets every series. */
  abstract reset(): void;
}

type Args<L extends string> = [value?: number] | [labels: Partial<Record<L, string | number>>, value?: number];

/** Splits the prom-client style `(labels?, value?)` arguments. */
export function splitArgs<L extends string>(args: Args<L>, fallback: number): [Partial<Record<L, string | number>>, number] {
  const [first, second] = args;
  if (typeof first === 'object') return [first, second ?? fallback];
  return [{}, first ?? fallback];
}

export type { Args };
