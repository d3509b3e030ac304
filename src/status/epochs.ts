import type { Proxy, RunOptions } from '../agent/proxy.ts';
import { shuttingDown, type ExitKind, type State } from '../agent/reconcile-types.ts';
import type { Clock } from '../shared/clock.ts';
import type { AgentMetrics } from './metrics.ts';
import type { NotLive, ServingEpoch } from './readiness.ts';

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
 * Sits between the agent and the real proxy and writes down what the
 * reconcile state does not keep: pids, start times, how epochs ended.
 */
export class EpochTracker {
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
