import { Counter, Gauge, type Registry } from '../metrics/index.ts';
import { registerRuntimeMetrics } from '../metrics/runtime.ts';
import type { Event, State } from '../agent/reconcile-types.ts';

/** The agent's own counters; the xDS relay registers its own on the same registry. */
export interface AgentMetrics {
  epochsStarted: Counter;
  epochExits: Counter<'kind'>;
  retries: Counter;
  certReloads: Counter;
}

/** Registers the agent's runtime metrics and the counters the epoch tracker and the events feed. */
export function registerAgentMetrics(registry: Registry): AgentMetrics {
  const registers = [registry];
  registerRuntimeMetrics(registry, 'istio_agent_');
  return {
    epochsStarted: new Counter({
      name: 'istio_agent_epochs_started_total',
      help: 'Envoy epochs started (the first start, hot restarts and retries)',
      registers,
    }),
    epochExits: new Counter({ name: 'istio_agent_epoch_exits_total', help: 'Envoy epochs that ended, by how they ended', labelNames: ['kind'], registers }),
    retries: new Counter({ name: 'istio_agent_retries_total', help: 'Retries of the desired config after an Envoy failure', registers }),
    certReloads: new Counter({ name: 'istio_agent_cert_reloads_total', help: 'Changes of the watched certificate files after the first', registers }),
  };
}

/**
 * Registers the gauges of the reconcile state, once the agent that holds it
 * exists. They read it when scraped, so they never go stale.
 */
export function registerStateGauges(registry: Registry, state: () => State): void {
  const registers = [registry];
  new Gauge({
    name: 'istio_agent_retry_budget',
    help: 'Retries left before the agent gives up on the desired config',
    registers,
    collect() {
      this.set(state().budget);
    },
  });
  new Gauge({ name: 'istio_agent_live_epochs', help: 'Envoy epochs currently running', registers, collect() { this.set(state().live.length); } });
  new Gauge({
    name: 'istio_agent_restart_held',
    help: 'A hot restart waits: the discovery server cannot be reached and no last-known-good config covers what Envoy needs',
    registers,
    collect() {
      this.set(state().gate.state === 'holding' ? 1 : 0);
    },
  });
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

/** Istio's counters of the merged-metrics endpoint, and its startup gauge, under Istio's names. */
export function registerScrapeMetrics(registry: Registry) {
  const registers = [registry];
  return {
    total: new Counter({ name: 'istio_agent_scrapes_total', help: 'Scrapes of the merged metrics (/stats/prometheus, /metrics)', registers }),
    failures: new Counter({
      name: 'istio_agent_scrape_failures_total',
      help: 'Parts of a merged scrape that failed, by type: envoy, application (one per app target), agent',
      labelNames: ['type'],
      registers,
    }),
    startup: new Gauge({ name: 'istio_agent_startup_duration_seconds', help: "Seconds from the agent's start until readiness first passed", registers }),
  };
}
