import { Counter, Gauge, type Registry } from '../metrics/index.ts';

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
