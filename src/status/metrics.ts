import { collectDefaultMetrics, Counter, Gauge, type Registry } from 'prom-client';
import type { Event, State } from '../agent/reconcile.ts';

/** The agent's own counters; the xDS relay registers its own on the same registry. */
export interface AgentMetrics {
  epochsStarted: Counter;
  epochExits: Counter<'kind'>;
  retries: Counter;
  certReloads: Counter;
}

/**
 * Registers the agent's metrics. Gauges read the reconcile state when
 * scraped, so they never go stale.
 */
export function registerAgentMetrics(registry: Registry, state: () => State): AgentMetrics {
  const registers = [registry];
  collectDefaultMetrics({ register: registry, prefix: 'pilot_agent_', eventLoopMonitoringPrecision: eventLoopSamplingOffMs });
  removeMisnamedGauges(registry);
  removeSampledLagGauges(registry);
  new Gauge({ name: 'pilot_agent_retry_budget', help: 'Retries left before the agent gives up on the desired config', registers, collect() { this.set(state().budget); } });
  new Gauge({ name: 'pilot_agent_live_epochs', help: 'Envoy epochs currently running', registers, collect() { this.set(state().live.length); } });
  return {
    epochsStarted: new Counter({ name: 'pilot_agent_epochs_started_total', help: 'Envoy epochs started (the first start, hot restarts and retries)', registers }),
    epochExits: new Counter({ name: 'pilot_agent_epoch_exits_total', help: 'Envoy epochs that ended, by how they ended', labelNames: ['kind'], registers }),
    retries: new Counter({ name: 'pilot_agent_retries_total', help: 'Retries of the desired config after an Envoy failure', registers }),
    certReloads: new Counter({ name: 'pilot_agent_cert_reloads_total', help: 'Changes of the watched certificate files after the first', registers }),
  };
}

/**
 * prom-client's `nodejs_active_{handles,requests,resources}_total` are gauges
 * named like counters, which Prometheus' naming rules forbid (rate() on them
 * would be nonsense). Each is the sum of the gauge of the same name without
 * `_total`, labelled by type, which stays: `sum()` over it gives the total.
 */
function removeMisnamedGauges(registry: Registry): void {
  for (const kind of ['handles', 'requests', 'resources']) registry.removeSingleMetric(`pilot_agent_nodejs_active_${kind}_total`);
}

/**
 * prom-client samples event-loop delay with a 10 ms timer by default: ~100
 * wake-ups a second in an idle sidecar, the bulk of its idle CPU. The timer
 * is pushed out to once an hour and the gauges built on its samples are
 * dropped; `nodejs_eventloop_lag_seconds` stays, measured at each scrape
 * (the delay of a setImmediate), so the lag is still visible, for free.
 */
const eventLoopSamplingOffMs = 3_600_000;

function removeSampledLagGauges(registry: Registry): void {
  for (const stat of ['min', 'max', 'mean', 'stddev', 'p50', 'p90', 'p99']) registry.removeSingleMetric(`pilot_agent_nodejs_eventloop_lag_${stat}_seconds`);
}

/** Counts what only the reconcile loop's events tell: retries and certificate changes. */
export function countAgentEvents(metrics: AgentMetrics): (event: Event, state: State) => void {
  let desired: string | undefined;
  return (event, state) => {
    if (event.type === 'retry-due') metrics.retries.inc();
    if (event.type === 'config-changed' && state.desired !== desired) {
      if (desired !== undefined) metrics.certReloads.inc();
      desired = state.desired;
    }
  };
}
