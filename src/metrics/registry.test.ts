import assert from 'node:assert/strict';
import { test } from 'node:test';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { Counter, Gauge, Histogram, Registry } from './index.ts';
import { readFileSync, writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readProcText, registerRuntimeMetrics } from './runtime.ts';

test('counters and gauges with and without labels, as a real parser reads them', async () => {
  const registry = new Registry();
  const registers = [registry];
  const plain = new Counter({ name: 'a_total', help: 'A', registers });
  const byKind = new Counter({ name: 'b_total', help: 'B', labelNames: ['kind', 'code'], registers });
  const gauge = new Gauge({ name: 'c', help: 'C', labelNames: ['resource'], registers });
  new Gauge({ name: 'd', help: 'D', registers, collect() { this.set(7); } });
  plain.inc();
  plain.inc(2);
  byKind.inc({ kind: 'x\n"y"' });
  byKind.inc({ kind: 'x\n"y"' }, 3);
  byKind.inc({ code: 'E' });
  gauge.set({ resource: 'default' }, 5);
  gauge.dec({ resource: 'default' });
  const families = Object.fromEntries(parsePrometheusTextFormat(await registry.metrics()).map((f) => [f.name, f]));
  assert.deepEqual(families.a_total!.metrics, [{ value: '3' }]);
  assert.deepEqual(families.b_total!.metrics, [{ value: '4', labels: { kind: 'x\n"y"' } }, { value: '1', labels: { code: 'E' } }]);
  assert.deepEqual([families.c!.type, families.c!.metrics], ['GAUGE', [{ value: '4', labels: { resource: 'default' } }]]);
  assert.deepEqual(families.d!.metrics, [{ value: '7' }]);
});

test('a histogram counts into cumulative buckets with +Inf, sum and count', async () => {
  const registry = new Registry();
  const histogram = new Histogram({ name: 'h_seconds', help: 'H', labelNames: ['kind'], buckets: [0.1, 1], registers: [registry] });
  for (const value of [0.05, 0.5, 0.5, 3]) histogram.observe({ kind: 'minor' }, value);
  const text = await registry.getSingleMetricAsString('h_seconds');
  assert.equal(text, [
    '# HELP h_seconds H', '# TYPE h_seconds histogram',
    'h_seconds_bucket{kind="minor",le="0.1"} 1', 'h_seconds_bucket{kind="minor",le="1"} 3', 'h_seconds_bucket{kind="minor",le="+Inf"} 4',
    'h_seconds_sum{kind="minor"} 4.05', 'h_seconds_count{kind="minor"} 4', '',
  ].join('\n'));
});

test('misuse throws: a counter going down, an undeclared label, a name registered twice', () => {
  const registry = new Registry();
  const counter = new Counter({ name: 'e_total', help: 'E', labelNames: ['kind'], registers: [registry] });
  assert.throws(() => counter.inc(-1), /cannot go down/);
  assert.throws(() => counter.inc({ other: 'x' } as never), /label other is not one of kind/);
  assert.throws(() => new Counter({ name: 'e_total', help: 'again', registers: [registry] }), /already registered/);
  assert.throws(() => new Gauge({ name: 'bad-name', help: 'x' }), /invalid metric name/);
});

test('reset forgets labelled series; an unlabelled one goes back to 0', async () => {
  const registry = new Registry();
  const gauge = new Gauge({ name: 'f', help: 'F', labelNames: ['resource'], registers: [registry] });
  const plain = new Gauge({ name: 'g', help: 'G', registers: [registry] });
  gauge.set({ resource: 'a' }, 1);
  plain.set(3);
  gauge.reset();
  plain.reset();
  assert.equal(await registry.metrics(), '# HELP f F\n# TYPE f gauge\n\n# HELP g G\n# TYPE g gauge\ng 0\n');
});

test('the runtime metrics keep prom-client\'s names and types, and none ends in _total unless a counter', async () => {
  const registry = new Registry();
  registerRuntimeMetrics(registry, 'p_');
  const families = parsePrometheusTextFormat(await registry.metrics());
  const types = Object.fromEntries(families.map((f) => [f.name, f.type]));
  assert.deepEqual(types, {
    p_process_cpu_user_seconds_total: 'COUNTER', p_process_cpu_system_seconds_total: 'COUNTER', p_process_cpu_seconds_total: 'COUNTER',
    p_process_start_time_seconds: 'GAUGE', p_process_resident_memory_bytes: 'GAUGE', p_process_virtual_memory_bytes: 'GAUGE', p_process_heap_bytes: 'GAUGE',
    p_process_open_fds: 'GAUGE', p_process_max_fds: 'GAUGE', p_nodejs_eventloop_lag_seconds: 'GAUGE',
    p_nodejs_active_resources: 'GAUGE', p_nodejs_active_handles: 'GAUGE', p_nodejs_active_requests: 'GAUGE',
    p_nodejs_heap_size_total_bytes: 'GAUGE', p_nodejs_heap_size_used_bytes: 'GAUGE', p_nodejs_external_memory_bytes: 'GAUGE',
    p_nodejs_heap_space_size_total_bytes: 'GAUGE', p_nodejs_heap_space_size_used_bytes: 'GAUGE', p_nodejs_heap_space_size_available_bytes: 'GAUGE',
    p_nodejs_version_info: 'GAUGE', p_nodejs_gc_duration_seconds: 'HISTOGRAM',
  });
  const value = (name: string) => Number(families.find((f) => f.name === name)!.metrics[0]!.value);
  assert.ok(value('p_process_resident_memory_bytes') > 1e6, 'RSS read from /proc');
  assert.ok(value('p_process_open_fds') > 0 && value('p_process_max_fds') >= value('p_process_open_fds'));
  assert.ok(value('p_process_cpu_seconds_total') > 0);
});

test('a /proc file is read whole into the shared buffer, cut at 16 KiB, and a missing one reads as empty', (t) => {
  assert.equal(readProcText('/proc/self/limits'), readFileSync('/proc/self/limits', 'utf8'));
  assert.match(readProcText('/proc/self/status'), /^VmRSS:\s+\d+ kB$/m);
  const dir = mkdtempSync(join(tmpdir(), 'proc-text-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'long'), 'x'.repeat(20_000));
  assert.equal(readProcText(join(dir, 'long')), 'x'.repeat(16 * 1024));
  assert.equal(readProcText(join(dir, 'missing')), '');
});
