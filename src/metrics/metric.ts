import { escapeHelp, escapeLabelValue, formatValue, type Family, type Labels, type MetricType, type Sample } from './exposition.ts';

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
/** Series whose label text a metric keeps rendered; past it the cache starts over (a metric with more series renders them anew). */
const labelTextCacheMax = 256;

/** One sample as a metric hands it over: the name's suffix, the series key, the value and, for a histogram bucket, its bound. */
export type EmitSample = (suffix: string, key: string, value: number, le?: number | string) => void;
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
  #head: string | undefined;
  /** `a="x",b="y"` per series key: every scrape renders the same series again. */
  readonly #labelText = new Map<string, string>();

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
    if (this.labelNames.length === 0 && Object.keys(labels).length === 0) return '[]';
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
    return { name: this.name, help: this.help, type: this.type, samples: this.#samples() };
  }

  /**
   * Runs `collect`, then the family's exposition text (formatFamily's), the
   * lines written straight from the series: a scrape every few seconds makes
   * no sample objects, and each series' labels are escaped once.
   */
  async text(): Promise<string> {
    await this.#collect?.call(this);
    let text = (this.#head ??= `# HELP ${this.name} ${escapeHelp(this.help)}\n# TYPE ${this.name} ${this.type}\n`);
    this.eachSample((suffix, key, value, le) => (text += `${this.name}${suffix}${this.#labels(key, le)} ${formatValue(value)}\n`));
    return text;
  }

  #labels(key: string, le: number | string | undefined): string {
    let pairs = this.#labelText.get(key);
    if (pairs === undefined) {
      if (this.#labelText.size >= labelTextCacheMax) this.#labelText.clear();
      pairs = Object.entries(this.labelsOf(key)).map(([name, value]) => `${name}="${escapeLabelValue(String(value))}"`).join(',');
      this.#labelText.set(key, pairs);
    }
    if (le !== undefined) pairs = pairs === '' ? `le="${le}"` : `${pairs},le="${le}"`;
    return pairs === '' ? '' : `{${pairs}}`;
  }

  #samples(): Sample[] {
    const samples: Sample[] = [];
    this.eachSample((suffix, key, value, le) => {
      const labels = this.labelsOf(key);
      samples.push({ name: this.name + suffix, labels: le === undefined ? labels : { ...labels, le }, value });
    });
    return samples;
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

  /** Every sample of the family as it is now, in exposition order. */
  protected abstract eachSample(emit: EmitSample): void;

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
