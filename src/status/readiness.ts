/** Envoy's admin API as readiness reads it (envoy/admin.ts's client fits; status/ does not import envoy/). */
export interface AdminReader {
  get(path: string, signal?: AbortSignal): Promise<{ ok: true; status: number; body: string } | { ok: false; error: string }>;
}

/** The Envoy stats readiness is decided from (REFERENCE §7). */
export interface ReadinessStats {
  serverState?: number;
  workersStarted?: number;
  cdsSuccess: number;
  cdsRejected: number;
  ldsSuccess: number;
  ldsRejected: number;
}

export type Readiness = { ready: true } | { ready: false; reason: string };

const statNames: Record<string, keyof ReadinessStats> = {
  'server.state': 'serverState',
  'listener_manager.workers_started': 'workersStarted',
  'cluster_manager.cds.update_success': 'cdsSuccess',
  'cluster_manager.cds.update_rejected': 'cdsRejected',
  'listener_manager.lds.update_success': 'ldsSuccess',
  'listener_manager.lds.update_rejected': 'ldsRejected',
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
 */
export function judgeReadiness(stats: ReadinessStats): Readiness {
  const config = judgeConfig(stats);
  if (config) return { ready: false, reason: config };
  if (stats.serverState !== 0) return { ready: false, reason: `Envoy is not live: server.state is ${describeState(stats.serverState)}` };
  if (!stats.workersStarted) return { ready: false, reason: 'Envoy is not live: workers not started' };
  return { ready: true };
}

function judgeConfig(stats: ReadinessStats): string | undefined {
  const cds = stats.cdsSuccess > 0;
  const lds = stats.ldsSuccess > 0;
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
  /** Something outside Envoy that keeps the pod from serving, e.g. no workload certificate. */
  blocked?: () => string | undefined;
}

/**
 * `/healthz/ready`. Once ready, "config received" is cached, as Istio
 * does; "an epoch is LIVE" never is: with none (Envoy killed, the agent
 * between restarts) the answer is 503, and the next Envoy must show its
 * own config before it counts as ready again.
 */
export class ReadinessProbe {
  readonly #options: ReadinessProbeOptions;
  #wasReady = false;

  constructor(options: ReadinessProbeOptions) {
    this.#options = options;
  }

  async check(signal?: AbortSignal): Promise<Readiness> {
    if (this.#options.stopping()) return { ready: false, reason: 'the agent is draining Envoy: server.state DRAINING' };
    const blocked = this.#options.blocked?.();
    if (blocked) return { ready: false, reason: blocked };
    const notLive = this.#options.notLive();
    if (notLive) this.#wasReady = false;
    if (notLive && !notLive.starting) return { ready: false, reason: notLive.reason };
    if (this.#wasReady) return { ready: true };
    const result = await this.#options.admin.get(readinessStatsPath, signal);
    if (!result.ok) return { ready: false, reason: `Envoy admin is not reachable: ${result.error}` };
    if (result.status !== 200) return { ready: false, reason: `Envoy admin answered HTTP ${result.status} to /stats` };
    const readiness = judgeReadiness(parseReadinessStats(result.body));
    this.#wasReady = readiness.ready;
    return readiness;
  }
}
