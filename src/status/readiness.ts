/** Envoy's admin API as readiness reads it (envoy/admin.ts's client fits; status/ does not import envoy/). */
export interface AdminReader {
  get(path: string, signal?: AbortSignal): Promise<{ ok: true; status: number; body: string } | { ok: false; error: string }>;
}

/** The Envoy stats readiness is decided from (REFERENCE §7). */
export interface ReadinessStats {
  serverState?: number;
  workersStarted?: number;
  /** The `--restart-epoch` of the Envoy that answered (admin moves to a hot-restart child as it starts). */
  hotRestartEpoch?: number;
  cdsSuccess: number;
  cdsRejected: number;
  ldsSuccess: number;
  ldsRejected: number;
  /**
   * When this process last took a CDS / LDS update (ms, 0: never). Gauges a
   * hot-restart child does not import, where the counters above add up its
   * parent's: only these tell whether the new epoch got config of its own.
   */
  cdsUpdateTime?: number;
  ldsUpdateTime?: number;
}

export type Readiness = { ready: true } | { ready: false; reason: string };

const statNames: Record<string, keyof ReadinessStats> = {
  'server.state': 'serverState',
  'server.hot_restart_epoch': 'hotRestartEpoch',
  'listener_manager.workers_started': 'workersStarted',
  'cluster_manager.cds.update_success': 'cdsSuccess',
  'cluster_manager.cds.update_rejected': 'cdsRejected',
  'cluster_manager.cds.update_time': 'cdsUpdateTime',
  'listener_manager.lds.update_success': 'ldsSuccess',
  'listener_manager.lds.update_rejected': 'ldsRejected',
  'listener_manager.lds.update_time': 'ldsUpdateTime',
};

/** Asks admin for just these stats; RE2 syntax, anchored. */
export const readinessStatsPath = `/stats?filter=${encodeURIComponent(`^(${Object.keys(statNames).map((name) => name.replaceAll('.', '\\.')).join('|')})$`)}`;

const serverStates = ['LIVE', 'DRAINING', 'PRE_INITIALIZING', 'INITIALIZING'];

/** Reads admin's `/stats` text (`name: value` lines) into the readiness fields. */
export function parseReadinessStats(text: string): ReadinessStats {
  const stats: ReadinessStats = { cdsSuccess: 0, cdsRejected: 0, ldsSuccess: 0, ldsRejected: 0 };
  for (const line of text.split('\n')) {
    const match = /^([\w.]+): (\d+)$/.exec(line.trim());
    const field = match ? statNames[match[1]!] : undefined;
    if (field) stats[field] = Number(match![2]);
  }
  return stats;
}

/**
 * Config first, as Istio does: a proxy without CDS and LDS is not ready
 * whatever its state, and the reason tells "not received" from "rejected".
 * With `epoch` (the one serving), the answer must be that epoch's own.
 */
export function judgeReadiness(stats: ReadinessStats, epoch?: number): Readiness {
  if (epoch !== undefined && stats.hotRestartEpoch !== undefined && stats.hotRestartEpoch !== epoch) {
    return { ready: false, reason: `Envoy admin answers for epoch ${stats.hotRestartEpoch}, still starting, not for epoch ${epoch} that serves` };
  }
  const config = judgeConfig(stats);
  if (config) return { ready: false, reason: config };
  if (stats.serverState !== 0) return { ready: false, reason: `Envoy is not live: server.state is ${describeState(stats.serverState)}` };
  if (!stats.workersStarted) return { ready: false, reason: 'Envoy is not live: workers not started' };
  return { ready: true };
}

/** This process's own update when Envoy tells it (the update_time gauges), else the counters. */
const received = (updateTime: number | undefined, success: number) => (updateTime === undefined ? success > 0 : updateTime > 0);

function judgeConfig(stats: ReadinessStats): string | undefined {
  const cds = received(stats.cdsUpdateTime, stats.cdsSuccess);
  const lds = received(stats.ldsUpdateTime, stats.ldsSuccess);
  if (cds && lds) return undefined;
  const counts = `cds updates: ${stats.cdsSuccess} successful, ${stats.cdsRejected} rejected; lds updates: ${stats.ldsSuccess} successful, ` +
    `${stats.ldsRejected} rejected`;
  if (stats.cdsRejected > 0 || stats.ldsRejected > 0) return `config received from the discovery server but rejected (${counts})`;
  if (!cds && !lds) return `config not received from the discovery server (${counts})`;
  return `config not fully received from the discovery server: ${cds ? 'LDS' : 'CDS'} missing (${counts})`;
}

function describeState(state: number | undefined): string {
  return state === undefined ? 'unknown' : `${state} (${serverStates[state] ?? 'unknown'})`;
}

export interface NotLive {
  reason: string;
  /** An epoch is starting: its own admin says best what it waits for. */
  starting: boolean;
}

export interface ReadinessProbeOptions {
  admin: AdminReader;
  /** True once the agent is draining or stopping: never ready then. */
  stopping: () => boolean;
  /** Why no Envoy epoch is LIVE and whether one is starting, or undefined while one is LIVE. */
  notLive: () => NotLive | undefined;
  /** The epoch whose readiness counts: the newest that took over (LIVE), else the newest starting one; undefined with none. */
  serving?: () => ServingEpoch | undefined;
  /** Something outside Envoy that keeps the pod from serving, e.g. no workload certificate. */
  blocked?: () => string | undefined;
}

export interface ServingEpoch {
  epoch: number;
  pid?: number;
}

/**
 * `/healthz/ready`. Readiness is earned by each epoch: once the serving
 * epoch was ready it stays so, as Istio caches it (no admin call), but only
 * for that epoch (its number and pid). A hot-restart child that takes over
 * is judged afresh by its own admin: its own epoch number, its own CDS and
 * LDS updates, not the counters its parent handed it. While the child only
 * starts (it waits for its config: no initial fetch timeout), its parent
 * serves, and readiness stays that parent's. With no epoch LIVE at all the
 * answer is 503.
 */
export class ReadinessProbe {
  readonly #options: ReadinessProbeOptions;
  /** The epoch found ready (`epoch/pid`), while it serves. */
  #readyEpoch: string | undefined;

  constructor(options: ReadinessProbeOptions) {
    this.#options = options;
  }

  async check(signal?: AbortSignal): Promise<Readiness> {
    if (this.#options.stopping()) return { ready: false, reason: 'the agent is draining Envoy: server.state DRAINING' };
    const blocked = this.#options.blocked?.();
    if (blocked) return { ready: false, reason: blocked };
    const notLive = this.#options.notLive();
    if (notLive && !notLive.starting) {
      this.#readyEpoch = undefined;
      return { ready: false, reason: notLive.reason };
    }
    const serving = this.#options.serving?.();
    // Without the epoch's identity (a caller that does not tell it), "an epoch is LIVE" is the key.
    const key = serving ? `${serving.epoch}/${serving.pid ?? ''}` : notLive ? undefined : 'live';
    if (key !== undefined && key === this.#readyEpoch) return { ready: true };
    const result = await this.#options.admin.get(readinessStatsPath, signal);
    if (!result.ok) return { ready: false, reason: `Envoy admin is not reachable: ${result.error}` };
    if (result.status !== 200) return { ready: false, reason: `Envoy admin answered HTTP ${result.status} to /stats` };
    const readiness = judgeReadiness(parseReadinessStats(result.body), serving?.epoch);
    this.#readyEpoch = readiness.ready ? key : undefined;
    return readiness;
  }
}
