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

test("the loop's metrics as scraped: each name, type, help and value (dashboards and `# HELP` read them)", async () => {
  const registry = new Registry();
  const state = initialState({ initialDelayMs: 200, budget: 10, stableAfterMs: 60_000 });
  const metrics = registerAgentMetrics(registry);
  registerStateGauges(registry, () => state);
  metrics.epochExits.inc({ kind: 'failed' });
  state.budget = 7;
  state.live = [0, 1].map((epoch) => ({ epoch, config: 'c', aborting: false, tookOver: epoch === 0 }));
  const ours = /^(# (HELP|TYPE) )?istio_agent_(epoch|retr|cert|live|restart)/;
  const lines = (await registry.metrics()).split('\n').filter((line) => ours.test(line));
  assert.deepEqual(lines, [
    '# HELP istio_agent_epochs_started_total Envoy epochs started (the first start, hot restarts and retries)',
    '# TYPE istio_agent_epochs_started_total counter',
    'istio_agent_epochs_started_total 0',
    '# HELP istio_agent_epoch_exits_total Envoy epochs that ended, by how they ended',
    '# TYPE istio_agent_epoch_exits_total counter',
    'istio_agent_epoch_exits_total{kind="failed"} 1',
    '# HELP istio_agent_retries_total Retries of the desired config after an Envoy failure',
    '# TYPE istio_agent_retries_total counter',
    'istio_agent_retries_total 0',
    '# HELP istio_agent_cert_reloads_total Changes of the watched certificate files after the first',
    '# TYPE istio_agent_cert_reloads_total counter',
    'istio_agent_cert_reloads_total 0',
    '# HELP istio_agent_retry_budget Retries left before the agent gives up on the desired config',
    '# TYPE istio_agent_retry_budget gauge',
    'istio_agent_retry_budget 7',
    '# HELP istio_agent_live_epochs Envoy epochs currently running',
    '# TYPE istio_agent_live_epochs gauge',
    'istio_agent_live_epochs 2',
    '# HELP istio_agent_restart_held A hot restart waits: the discovery server cannot be reached and no last-known-good config covers what Envoy needs',
    '# TYPE istio_agent_restart_held gauge',
    'istio_agent_restart_held 0',
  ]);
});
