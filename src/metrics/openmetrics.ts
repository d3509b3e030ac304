// The OpenMetrics 1.0 text format, made from the Prometheus text format the
// agent merges (its own metrics, Envoy's, the app's): what /stats/prometheus
// serves when the scraper asks for `application/openmetrics-text`.

export const openMetricsContentType = 'application/openmetrics-text; version=1.0.0; charset=utf-8';

const typeLine = /^# TYPE (\S+) (\S+)/;
const helpLine = /^# HELP (\S+)(.*)$/;

/** The family name OpenMetrics gives a counter: without its `_total`, which only its samples carry. */
const counterFamily = (name: string) => (name.endsWith('_total') ? name.slice(0, -'_total'.length) : name);

/**
 * Rewrites Prometheus text as OpenMetrics: counters' families lose `_total`
 * and their samples gain it, `untyped` is `unknown`, blank lines and free
 * comments (OpenMetrics has none) are dropped, and one `# EOF` ends it.
 * Linear in the text: one pass for the types, one for the lines.
 */
export function toOpenMetrics(text: string): string {
  const types = new Map<string, string>();
  for (const line of text.split('\n')) {
    const match = typeLine.exec(line);
    if (match && !types.has(match[1]!)) types.set(match[1]!, match[2]!);
  }
  const counters = new Map<string, string>();
  for (const [name, type] of types) if (type === 'counter') counters.set(name, counterFamily(name));
  const out: string[] = [];
  for (const line of text.split('\n')) {
    const rewritten = rewriteLine(line, types, counters);
    if (rewritten !== undefined) out.push(rewritten);
  }
  out.push('# EOF');
  return `${out.join('\n')}\n`;
}

function rewriteLine(line: string, types: Map<string, string>, counters: Map<string, string>): string | undefined {
  if (line.trim() === '') return undefined;
  if (line.startsWith('#')) return rewriteComment(line, types, counters);
  const end = line.search(/[{\s]/);
  const name = end < 0 ? line : line.slice(0, end);
  const family = counters.get(name);
  if (family === undefined || name === `${family}_total`) return line;
  return `${family}_total${line.slice(name.length)}`;
}

function rewriteComment(line: string, types: Map<string, string>, counters: Map<string, string>): string | undefined {
  const type = typeLine.exec(line);
  if (type) {
    const kind = type[2] === 'untyped' ? 'unknown' : type[2]!;
    return `# TYPE ${counters.get(type[1]!) ?? type[1]} ${kind}`;
  }
  const help = helpLine.exec(line);
  if (help) return `# HELP ${counters.get(help[1]!) ?? help[1]}${help[2]}`;
  return undefined;
}
