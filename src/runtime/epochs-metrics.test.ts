import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Registry } from '../metrics/index.ts';
import { initialState } from '../agent/reconcile.ts';
import { registerAgentMetrics, registerStateGauges } from './epochs.ts';

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

test('istio_agent_restart_held reads the reconcile state\'s gate when scraped', async () => {
  const registry = new Registry();
  const state = initialState({ initialDelayMs: 200, budget: 10, stableAfterMs: 60_000 });
  registerStateGauges(registry, () => state);
  state.gate = { state: 'holding', reason: 'upstream unreachable' };
  const held = await registry.metrics();
  assert.match(held, /^# HELP istio_agent_restart_held A hot restart waits: the discovery server cannot be reached/m);
  assert.match(held, /^istio_agent_restart_held 1$/m);
  state.gate = { state: 'closed', reason: 'upstream unreachable' };
  assert.match(await registry.metrics(), /^istio_agent_restart_held 0$/m);
});
