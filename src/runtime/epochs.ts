import type { Proxy, RunOptions } from '../agent/proxy.ts';
import { shuttingDown, type Event, type ExitKind, type State } from '../agent/reconcile-types.ts';
import { Counter, Gauge, type Registry } from '../metrics/index.ts';
import { registerRuntimeMetrics } from '../metrics/runtime.ts';
import type { Clock } from '../shared/clock.ts';
import type { NotLive, ServingEpoch } from '../status/readiness.ts';
import type { EpochsView } from '../status/status.ts';

export interface EpochRecord {
  epoch: number;
  pid?: number;
  /** ISO time the epoch was started. */
  startedAt: string;
  /** SHA-256 of the watched certificate files this epoch runs with. */
  config: string;
  /** Reported LIVE before it ended (the live epochs' flag is the reconcile state's `tookOver`). */
  live?: boolean;
}

export interface ExitRecord extends EpochRecord {
  exitedAt: string;
  kind: ExitKind;
  detail: string;
}

export interface EpochsDebug {
  live: (EpochRecord & { aborting: boolean })[];
  recentExits: ExitRecord[];
  retry: { budget: number; of: number; scheduled: boolean };
  shuttingDown: boolean;
}

export interface EpochTrackerOptions {
  clock: Clock;
  metrics?: AgentMetrics;
  /** How many exits /debug/epochs remembers. */
  keepExits?: number;
}

/**
 * The loop's epoch tracker: sits between the agent and the real proxy and
 * writes down what the reconcile state does not keep: pids, start times, how
 * epochs ended. The status server reads it as its own `EpochsView`.
 */
export class EpochTracker implements EpochsView {
  readonly #options: EpochTrackerOptions;
  readonly #running = new Map<number, EpochRecord>();
  readonly #exits: ExitRecord[] = [];

  constructor(options: EpochTrackerOptions) {
    this.#options = options;
  }

  /** The same proxy, observed. */
  wrap(proxy: Proxy): Proxy {
    return {
      run: (epoch, config, options) => this.#run(proxy, epoch, config, options),
      drain: (options) => proxy.drain(options),
      activeConnections: (signal) => proxy.activeConnections(signal),
      cleanup: (epoch) => proxy.cleanup(epoch),
    };
  }

  async #run(proxy: Proxy, epoch: number, config: string, options: RunOptions) {
    const record: EpochRecord = { epoch, startedAt: this.#isoNow(), config, live: false };
    this.#running.set(epoch, record);
    this.#options.metrics?.epochsStarted.inc();
    const exit = await proxy.run(epoch, config, {
      ...options,
      onStarted: (info) => ((record.pid = info.pid), options.onStarted?.(info)),
      onLive: (details) => ((record.live = true), options.onLive(details)),
    });
    this.#running.delete(epoch);
    this.#exits.push({ ...record, exitedAt: this.#isoNow(), kind: exit.kind, detail: exit.detail });
    this.#exits.splice(0, this.#exits.length - (this.#options.keepExits ?? 20));
    this.#options.metrics?.epochExits.inc({ kind: exit.kind });
    return exit;
  }

  /** Why no epoch is LIVE (the reconcile state says), with how the last one ended; undefined while one is. */
  whyNotLive(state: Pick<State, 'live'>): NotLive | undefined {
    if (state.live.some((entry) => entry.tookOver)) return undefined;
    const now = state.live.length > 0 ? `epoch ${state.live.map((entry) => entry.epoch).join(', ')} starting` : 'no Envoy running';
    const last = this.#exits.at(-1);
    return {
      reason: `no Envoy epoch is LIVE (${now}${last ? `; epoch ${last.epoch} ended ${last.kind}: ${last.detail}` : ''})`,
      starting: state.live.length > 0,
    };
  }

  /**
   * The epoch whose readiness counts: the newest that took over (the one
   * serving), else, while none has, the newest one starting (admin is its).
   */
  serving(state: Pick<State, 'live'>): ServingEpoch | undefined {
    const entry = state.live.filter((candidate) => candidate.tookOver).at(-1) ?? state.live.filter((candidate) => !candidate.aborting).at(-1);
    return entry && { epoch: entry.epoch, pid: entry.pid };
  }

  /** /debug/epochs: the live epochs (newest last), recent exits (newest last), the retry budget. */
  snapshot(state: State): EpochsDebug {
    const live = state.live.map((entry) => ({
      ...(this.#running.get(entry.epoch) ?? { epoch: entry.epoch, startedAt: '', config: entry.config }),
      pid: entry.pid,
      live: entry.tookOver,
      aborting: entry.aborting,
    }));
    return {
      live,
      recentExits: [...this.#exits],
      retry: { budget: state.budget, of: state.policy.budget, scheduled: state.retryScheduled },
      shuttingDown: shuttingDown(state),
    };
  }

  #isoNow(): string {
    return new Date(this.#options.clock.now()).toISOString();
  }
}

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
