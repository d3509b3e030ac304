// The Prometheus text exposition format, version 0.0.4: what /stats/prometheus
// serves for the agent's own metrics.

export type MetricType = 'counter' | 'gauge' | 'histogram';
export type Labels = Readonly<Record<string, string | number>>;

/** One line of a family: the sample's name (with a suffix for histograms), labels and value. */
export interface Sample {
  name: string;
  labels: Labels;
  value: number;
}

export interface Family {
  name: string;
  help: string;
  type: MetricType;
  samples: readonly Sample[];
}

export const contentType = 'text/plain; version=0.0.4; charset=utf-8';

/** HELP text: backslash and newline are escaped (quotes are not, unlike label values). */
export const escapeHelp = (text: string) => text.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');

/** A label value: backslash, double quote and newline are escaped. */
export const escapeLabelValue = (text: string) => text.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');

/** A sample value as Prometheus spells the special floats. */
export function formatValue(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (value === Infinity) return '+Inf';
  if (value === -Infinity) return '-Inf';
  return String(value);
}

function formatLabels(labels: Labels): string {
  const pairs = Object.entries(labels).map(([name, value]) => `${name}="${escapeLabelValue(String(value))}"`);
  return pairs.length === 0 ? '' : `{${pairs.join(',')}}`;
}

/** One family: HELP, TYPE, then its samples, one a line. */
export function formatFamily(family: Family): string {
  const lines = [`# HELP ${family.name} ${escapeHelp(family.help)}`, `# TYPE ${family.name} ${family.type}`];
  for (const sample of family.samples) lines.push(`${sample.name}${formatLabels(sample.labels)} ${formatValue(sample.value)}`);
  return `${lines.join('\n')}\n`;
}

/** Every family, a blank line between them (as prom-client wrote them). */
export function formatFamilies(families: readonly Family[]): string {
  return families.map(formatFamily).join('\n');
}
