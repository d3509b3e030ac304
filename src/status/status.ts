import type { Registry } from '../metrics/index.ts';
import type { Event, State } from '../agent/reconcile.ts';
import { adminClient } from '../envoy/admin.ts';
import { drainEnvoy } from '../envoy/drain.ts';
import type { Clock } from '../shared/clock.ts';
import type { Logger } from '../shared/log.ts';
import { appMetricsPart, type AppMetricsTarget } from './app-metrics.ts';
import { appHealth } from './app-probes/app-health.ts';
import type { AppProbe } from './app-probes/config.ts';
import type { EpochTracker } from './epochs.ts';
import type { StatusDeps } from './handler.ts';
import { envoyMetricsCapBytes, fetchCapped } from './prometheus.ts';
import { ReadinessProbe } from './readiness.ts';
import { startStatusServer, type StatusServer } from './server.ts';

/** The agent as the status server sees it. */
export interface StatusAgent {
  readonly state: State;
  dispatch(event: Event): void;
  hurry(): void;
}

export interface StartStatusOptions {
  port: number;
  /** Where Envoy's readiness listener reaches the status server. */
  readinessSocketPath: string;
  adminPort: number;
  /** Sidecars drain inbound listeners only. */
  inboundOnly: boolean;
  agent: StatusAgent;
  epochs: EpochTracker;
  registry: Registry;
  xds?: StatusDeps['xds'];
  sds?: StatusDeps['sds'];
  /** The DNS proxy, when on (/debug/ndsz). */
  dns?: StatusDeps['dns'];
  /** Why there is no workload certificate to serve (the CA fails), which keeps readiness 503. */
  certificateProblem?: () => string | undefined;
  /** From ISTIO_KUBE_APP_PROBERS and ISTIO_PROMETHEUS_ANNOTATIONS. */
  app?: { probes: ReadonlyMap<string, AppProbe>; metrics?: AppMetricsTarget };
  clock: Clock;
  logger: Logger;
}

/** Starts the status server, or nothing when the port is 0. */
export async function startStatus(options: StartStatusOptions): Promise<StatusServer | undefined> {
  if (options.port === 0) return undefined;
  const server = await startStatusServer({ port: options.port, readinessSocketPath: options.readinessSocketPath, deps: statusDeps(options), logger: options.logger });
  options.logger.info({ port: server.port }, 'status server listening');
  return server;
}

/** Wires the endpoints to the agent, Envoy's admin API and the metrics registry. */
export function statusDeps(options: StartStatusOptions): StatusDeps {
  const { agent, registry, logger } = options;
  const admin = adminClient(options.adminPort);
  let drained = false;
  return {
    readiness: new ReadinessProbe({ admin, stopping: () => drained || agent.state.shuttingDown, notLive: () => options.epochs.whyNotLive(), blocked: options.certificateProblem }),
    agentMetrics: () => registry.metrics(),
    envoyMetrics: (signal) => fetchCapped(`http://127.0.0.1:${options.adminPort}/stats/prometheus`, { capBytes: envoyMetricsCapBytes, timeoutMs: 5000, signal }),
    epochs: () => options.epochs.snapshot(agent.state),
    xds: options.xds,
    sds: options.sds,
    dns: options.dns,
    appHealth: options.app?.probes.size ? appHealth(options.app.probes, logger) : undefined,
    appMetrics: options.app?.metrics ? appMetricsPart(options.app.metrics, registry, logger) : undefined,
    quit: () => {
      logger.info('quitquitquit: stopping Envoy and exiting');
      agent.hurry();
      agent.dispatch({ type: 'shutdown' });
    },
    drain: async () => {
      logger.info('drain requested');
      drained = true;
      return drainEnvoy({ admin, clock: options.clock, logger, signal: new AbortController().signal, durationMs: 0, inboundOnly: options.inboundOnly });
    },
  };
}
