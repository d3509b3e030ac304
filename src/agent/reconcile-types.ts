import type { ErrorCode } from '../shared/errors.ts';

/**
 * The reconcile reducer's state, the events it takes and the actions it returns (the rules are in `reconcile.ts`, `reconcile-failures.ts` and
 * `reconcile-shutdown.ts`).
 */

export interface RetryPolicy {
  initialDelayMs: number;
  budget: number;
  stableAfterMs: number;
  /**
   * Wait before trying an epoch again whose parent was still initializing:
   * not a failure, so no backoff and no budget, but not a spawn every 200 ms
   * for the up to 15 s a parent may spend warming clusters either. 1 s when unset.
   */
  parentInitializingDelayMs?: number;
}

export interface LiveEpoch {
  epoch: number;
  config: string;
  aborting: boolean;
  /** Reported LIVE: it has taken over from its parent. */
  tookOver: boolean;
  /** Its process, once spawned. */
  pid?: number;
}

/**
 * Where the agent is in its life: serving (and reconciling), draining before
 * exit, or stopping epochs newest first once the drain is over.
 */
export type Phase = 'running' | 'draining' | 'stopping';

/**
 * The restart gate (restart-gate.ts) as the reducer sees it: open unless told
 * otherwise; `holding` is closed with a hot restart waiting behind it.
 */
export type Gate = { state: 'open' } | { state: 'closed' | 'holding'; reason: string };

export interface State {
  desired?: string;
  current?: string;
  live: readonly LiveEpoch[];
  budget: number;
  phase: Phase;
  /** POST /drain drained Envoy for good (native sidecars' preStop): readiness fails, and the shutdown skips its drain. */
  drainedEarly: boolean;
  /** The shutdown drain was cut short (a second signal, /quitquitquit, a fault). */
  hurried: boolean;
  /** A fault no caller handled stopped the run (the process guard exits 1 once every epoch is gone). */
  faulted: boolean;
  gate: Gate;
  /**
   * Pending work, not phases: a retry timer runs, or a retry came due while
   * aborted epochs were still exiting. Both can hold at once (a retry comes due
   * and waits, then the starting epoch fails and schedules the next one).
   */
  retryScheduled: boolean;
  reconcileWhenSettled: boolean;
  /** Why the last epoch failed, for the log line when the budget is spent. */
  lastFailure?: string;
  policy: RetryPolicy;
}

/** Draining or stopping: no new epoch starts and no retry is scheduled. */
export const shuttingDown = (state: Pick<State, 'phase'>): boolean => state.phase !== 'running';

/** Not to be sent traffic: drained by POST /drain, or shutting down (readiness fails). */
export const stoppedServing = (state: Pick<State, 'phase' | 'drainedEarly'>): boolean => state.drainedEarly || shuttingDown(state);

/** `rejected`: Envoy refused its input at start (validation, a port it cannot bind). */
export type ExitKind = 'aborted' | 'normal' | 'failed' | 'rejected' | 'parent-initializing';

export type Event =
  /** `replaceStarting`: an epoch not LIVE yet is stopped for this config instead of waited for (it has nothing to hand over: the Delta→SotW fallback). */
  | { type: 'config-changed'; config: string; replaceStarting?: boolean }
  | { type: 'epoch-exited'; epoch: number; kind: ExitKind; detail: string }
  | { type: 'epoch-spawned'; epoch: number; pid: number }
  | { type: 'epoch-live'; epoch: number }
  | { type: 'epoch-stable'; epoch: number }
  | { type: 'retry-due' }
  | { type: 'gate-changed'; open: boolean; reason: string }
  | { type: 'shutdown' }
  /** POST /drain: drain the listeners now and for good (skip_exit). */
  | { type: 'drain-requested' }
  /** Cut the shutdown drain short. */
  | { type: 'hurry' }
  /** A fault no caller handled: stop every epoch now, without a drain. */
  | { type: 'fault' }
  | { type: 'drained' };

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

export type Action =
  | { type: 'start-epoch'; epoch: number; config: string }
  | { type: 'abort-epoch'; epoch: number }
  | { type: 'remove-bootstrap'; epoch: number }
  | { type: 'schedule'; event: Event; delayMs: number }
  | { type: 'cancel-retry' }
  | { type: 'drain' }
  /** An epoch took over while the shutdown drain runs: drain its listeners too. */
  | { type: 'drain-listeners'; epoch: number }
  /** POST /drain: the serving epoch drains its listeners and stays up (skip_exit). */
  | { type: 'drain-early' }
  /** Abort the drain under way: every epoch stops now. */
  | { type: 'cut-drain' }
  | { type: 'log'; level: LogLevel; message: string; fields: Record<string, unknown> }
  /** `error`: why the run failed (errors.ts maps it to the exit number); `reason`: the one line the CLI prints on stderr. */
  | { type: 'exit'; error?: ErrorCode; reason?: string };

export type Step = [State, Action[]];

export type ExitEvent = Extract<Event, { type: 'epoch-exited' }>;
