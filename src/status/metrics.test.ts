import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Registry } from '../metrics/index.ts';
import { initialState } from '../agent/reconcile.ts';
import { registerAgentMetrics, registerStateGauges } from './metrics.ts';

test('only counters end in _total, as Prometheus names them', async () => {
  const registry = new Registry();
  registerAgentMetrics(registry);
  registerStateGauges(registry, () => initialState({ initialDelayMs: 200, budget: 10, stableAfterMs: 60_000 }));
  const families = await registry.getMetricsAsJSON();
  const misnamed = families.filter((family) => family.name.endsWith('_total') && String(family.type) !== 'counter');
  assert.deepEqual(misnamed.map((family) => `${family.name} (${family.type})`), []);
  const names = families.map((family) => family.name);
  assert.ok(names.includes('istio_agent_nodejs_active_handles'), 'the per-type gauge the total was the sum of stays');
  assert.ok(names.includes('istio_agent_process_cpu_seconds_total'), 'real counters keep _total');
});

test('event-loop lag is measured at scrape, not sampled by a timer', async () => {
  const registry = new Registry();
  registerAgentMetrics(registry);
  registerStateGauges(registry, () => initialState({ initialDelayMs: 200, budget: 10, stableAfterMs: 60_000 }));
  const names = (await registry.getMetricsAsJSON()).map((family) => family.name);
  assert.ok(names.includes('istio_agent_nodejs_eventloop_lag_seconds'));
  assert.deepEqual(names.filter((name) => /eventloop_lag_(min|max|mean|stddev|p\d+)_seconds/.test(name)), []);
});
