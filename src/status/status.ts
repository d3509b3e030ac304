import type { Registry } from '../metrics/index.ts';
import { stoppedServing, type Event, type State } from '../agent/reconcile-types.ts';
import type { Clock } from '../shared/clock.ts';
import { formatHostPort } from '../shared/host-port.ts';
import type { Logger } from '../shared/log.ts';
import { isLoopbackPeer } from './access.ts';
import { appMetricsPart, type AppMetricsTarget } from './app-metrics.ts';
import { appHealth } from './app-probes/app-health.ts';
import type { AppProbe } from './app-probes/config.ts';
import type { ProbeNetwork } from './app-probes/probe-target.ts';
import type { StatusDeps } from './handler.ts';
import { openStream } from './prometheus.ts';
import { registerScrapeMetrics } from './metrics.ts';
import { ScrapeGate, scrapeLimits } from './scrape-gate.ts';
import { ReadinessProbe, type AdminReader, type NotLive, type Readiness, type ServingEpoch } from './readiness.ts';
import { startStatusServer, type StatusServer } from './server.ts';

/** The agent as the status server sees it. */
export interface StatusAgent {
  readonly state: State;
  dispatch(event: Event): void;
  /** Stops every epoch now, without a drain. */
  stopNow(): void;
  /** POST /drain through the reconcile loop; whether Envoy took it. */
  requestDrain(): Promise<boolean>;
}

/** What the status server reads of the loop's epochs (the loop's tracker, runtime/epochs.ts): why none is LIVE, which one counts, /debug/epochs. */
export interface EpochsView {
  whyNotLive(state: Pick<State, 'live'>): NotLive | undefined;
  serving(state: Pick<State, 'live'>): ServingEpoch | undefined;
  snapshot(state: State): unknown;
}

export interface StartStatusOptions {
  port: number;
  /** Where Envoy's readiness listener reaches the status server. */
  readinessSocketPath: string;
  adminPort: number;
  /** Where admin listens: 127.0.0.1, or ::1 in an IPv6-only pod. */
  adminHost?: string;
  /** Envoy's admin API on adminPort (made by the runtime: status/ does not import envoy/). */
  admin: AdminReader;
  agent: StatusAgent;
  epochs: EpochsView;
  registry: Registry;
  xds?: StatusDeps['xds'];
  sds?: StatusDeps['sds'];
  /** The DNS proxy, when on (/debug/ndsz). */
  dns?: StatusDeps['dns'];
  /** Why there is no workload certificate to serve (the CA fails), which keeps readiness 503. */
  certificateProblem?: () => string | undefined;
  /** From ISTIO_KUBE_APP_PROBERS (and how probes reach the app), ISTIO_PROMETHEUS_ANNOTATIONS, PILOT_AGENT_MERGE_ENVOY_STATS. */
  app?: { probes: ReadonlyMap<string, AppProbe>; probeNetwork: ProbeNetwork; metrics?: readonly AppMetricsTarget[]; mergeEnvoyStats?: boolean };
  clock: Clock;
  logger: Logger;
}

/** Starts the status server, or nothing when the port is 0. */
export async function startStatus(options: StartStatusOptions): Promise<StatusServer | undefined> {
  if (options.port === 0) return undefined;
  const server = await startStatusServer({
    port: options.port,
    readinessSocketPath: options.readinessSocketPath,
    deps: statusDeps(options),
    logger: options.logger,
  });
  options.logger.info({ port: server.port }, 'status server listening');
  return server;
}

/** Wires the endpoints to the agent, Envoy's admin API and the metrics registry. */
export function statusDeps(options: StartStatusOptions): StatusDeps {
  const { agent, registry, logger } = options;
  const { admin } = options;
  const scrapes = registerScrapeMetrics(registry);
  const readiness = new ReadinessProbe({
    admin,
    stopping: () => stoppedServing(agent.state),
    notLive: () => options.epochs.whyNotLive(agent.state),
    serving: () => options.epochs.serving(agent.state),
    blocked: options.certificateProblem,
  });
  const appTargets = options.app?.metrics ?? [];
  return {
    readiness: recordStartup(readiness, scrapes.startup, logger),
    agentMetrics: () => registry.metrics(),
    envoyMetrics: options.app?.mergeEnvoyStats === false ? undefined
      : (signal) => openStream(`http://${adminAt(options)}/stats/prometheus`, { timeoutMs: 5000, signal }),
    scrapes: { scraped: () => scrapes.total.inc(), failed: (type) => scrapes.failures.inc({ type: type }) },
    scrapeGate: new ScrapeGate({ ...scrapeLimits, trusted: isLoopbackPeer }),
    epochs: () => options.epochs.snapshot(agent.state),
    xds: options.xds,
    sds: options.sds,
    dns: options.dns,
    appHealth: options.app?.probes.size ? appHealth(options.app.probes, options.app.probeNetwork, logger) : undefined,
    appMetrics: appTargets.length > 0 ? appMetricsPart(appTargets, () => scrapes.failures.inc({ type: 'application' }), logger) : undefined,
    quit: () => {
      logger.info('quitquitquit: stopping Envoy and exiting');
      agent.stopNow();
    },
    // Native sidecars' preStop: drain now and for good (skip_exit), so the SIGTERM that follows stops at once.
    drain: () => agent.requestDrain(),
  };
}

/**
 * Istio's istio_agent_startup_duration_seconds: the process's age when
 * readiness first passed (as Istio's, as often as the kubelet asks).
 */
function recordStartup(probe: ReadinessProbe, gauge: { set(value: number): void }, logger: Logger) {
  let recorded = false;
  return {
    check: async (signal?: AbortSignal): Promise<Readiness> => {
      const readiness = await probe.check(signal);
      if (readiness.ready && !recorded) {
        recorded = true;
        gauge.set(process.uptime());
        logger.info({ seconds: Math.round(process.uptime() * 1000) / 1000 }, 'ready for the first time');
      }
      return readiness;
    },
  };
}

/** Admin's host:port for a URL: ::1 bracketed in an IPv6-only pod. */
const adminAt = (options: Pick<StartStatusOptions, 'adminHost' | 'adminPort'>) =>
  formatHostPort({ host: options.adminHost ?? '127.0.0.1', port: options.adminPort });
