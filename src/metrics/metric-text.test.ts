import assert from 'node:assert/strict';
import { test } from 'node:test';
import { formatFamily } from './exposition.ts';
import { Counter, Gauge, Histogram, Registry } from './index.ts';
import type { Metric } from './metric.ts';

const asFormatted = async (metric: Metric<string>) => formatFamily(await metric.family());

test('a metric writes its text as formatFamily writes its family: labels escaped, histogram buckets, special values', async () => {
  const registry = new Registry();
  const registers = [registry];
  const plain = new Counter({ name: 'a_total', help: 'A "quoted"\nhelp \\', registers });
  const byKind = new Counter({ name: 'b_total', help: 'B', labelNames: ['kind', 'code'], registers });
  const gauge = new Gauge({ name: 'c', help: 'C', labelNames: ['space'], registers, collect() { this.set({ space: 'old' }, NaN); } });
  const histogram = new Histogram({ name: 'd_seconds', help: 'D', labelNames: ['kind'], buckets: [0.01, 1, 0.001], registers });
  plain.inc(3);
  byKind.inc({ kind: 'x\n"y"\\' });
  byKind.inc({ code: 'E' }, 2);
  gauge.set({ space: 'new' }, -Infinity);
  histogram.observe({ kind: 'major' }, 0.5);
  histogram.observe({}, 7);
  for (const metric of [plain, byKind, gauge, histogram] as Metric<string>[]) assert.equal(await metric.text(), await asFormatted(metric), metric.name);
  assert.match(await histogram.text(), /^d_seconds_bucket\{kind="major",le="1"\} 1$/m);
  assert.match(await histogram.text(), /^d_seconds_bucket\{le="\+Inf"\} 1$/m);
  const texts = await Promise.all([plain, byKind, gauge, histogram].map((metric) => metric.text()));
  assert.equal(await registry.metrics(), texts.join('\n'));
});

test('the labels rendered stay right past the cache: more series than it keeps, values changed, series reset', async () => {
  const gauge = new Gauge({ name: 'g', help: 'G', labelNames: ['n'] });
  for (let round = 0; round < 3; round++) {
    for (let n = 0; n < 600; n++) gauge.set({ n: `${n}"` }, n * round);
    assert.equal(await gauge.text(), await asFormatted(gauge), `round ${round}`);
    gauge.reset();
    gauge.set({ n: 'only' }, round);
    assert.equal(await gauge.text(), '# HELP g G\n# TYPE g gauge\ng{n="only"} ' + round + '\n');
    gauge.reset();
  }
});
