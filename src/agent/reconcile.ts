import { shortHash } from '../shared/short-hash.ts';
import { afterFailure, log, scheduleRetry, withRetry } from './reconcile-failures.ts';
import { drainTakeover, exitWhileShuttingDown, onDrainRequested, onFault, onHurry, onShutdown, stopNewest } from './reconcile-shutdown.ts';
import { shuttingDown, type Action, type Event, type ExitEvent, type LiveEpoch, type RetryPolicy, type State, type Step } from './reconcile-types.ts';

/*
 * The reconcile loop as a pure function: `reduce(state, event)` returns the
 * next state and the actions to run. It decides; `agent.ts` acts.
 *
 * Desired config is a hash of the watched certificate files. Every start is
 * a hot restart: the new epoch is the highest live one + 1. Failures:
 * - an epoch that had taken over (reported LIVE, no newer one LIVE since)
 *   fails: the chain is broken, every epoch is aborted and one retry is
 *   scheduled after initialDelay × 2^(used budget), from epoch 0;
 * - a new epoch fails (or Envoy rejects its config) before taking over: the
 *   epochs that still serve keep serving, and the new config is retried with
 *   the same backoff. Once the budget is spent they keep serving the old
 *   config until the desired config changes again (never exit 1 on them);
 * - Envoy rejects its config with no other epoch running (a taken port, an
 *   unknown log component): bad input, exit 2 with Envoy's reason;
 * - a superseded epoch (draining after its child took over) fails: logged.
 *
 * Budget refill (Istio refilled it only on a new desired config): we refill
 * it on a new desired config, and also once an epoch has stayed LIVE for
 * `stableAfterMs`, so a proxy that crashes once a week does not slowly spend
 * its budget and die for good.
 *
 * The restart gate (see restart-gate.ts): while it is closed, a new config
 * does not hot-restart a serving epoch into a proxy that would get no xDS
 * config; the running epoch keeps serving until the gate opens. A first
 * start, or a retry after every epoch failed, is never held: nothing serves.
 *
 * `current` is the config of the newest epoch that is not being aborted: an
 * epoch on its way out does not count as running the desired config, or a
 * retry that comes due while it exits would wrongly find nothing to do.
 */

export function initialState(policy: RetryPolicy): State {
  return {
    live: [],
    budget: policy.budget,
    phase: 'running',
    drainedEarly: false,
    hurried: false,
    faulted: false,
    gate: { state: 'open' },
    retryScheduled: false,
    reconcileWhenSettled: false,
    policy,
  };
}

export function reduce(state: State, event: Event): Step {
  switch (event.type) {
    case 'config-changed':
      return onConfigChanged(state, event.config, event.replaceStarting === true);
    case 'epoch-exited':
      return onEpochExited(state, event);
    case 'epoch-spawned':
      return [{ ...state, live: state.live.map((entry) => (entry.epoch === event.epoch ? { ...entry, pid: event.pid } : entry)) }, []];
    case 'epoch-live':
      return onEpochLive(state, event.epoch);
    case 'epoch-stable':
      return onEpochStable(state, event.epoch);
    case 'retry-due':
      return reconcile({ ...state, retryScheduled: false });
    case 'gate-changed':
      return onGateChanged(state, event);
    case 'shutdown':
      return onShutdown(state);
    case 'drain-requested':
      return onDrainRequested(state);
    case 'hurry':
      return onHurry(state);
    case 'fault':
      return onFault(state);
    case 'drained':
      return stopNewest({ ...state, phase: 'stopping' });
  }
}

function onConfigChanged(state: State, config: string, replaceStarting: boolean): Step {
  if (config === state.desired || shuttingDown(state)) return [state, []];
  const next = { ...state, desired: config, budget: state.policy.budget, retryScheduled: false };
  const [replaced, aborts] = replaceStarting ? abortStarting(next) : [next, []];
  const [after, actions] = reconcile(replaced);
  const cancel: Action[] = state.retryScheduled ? [{ type: 'cancel-retry' }] : [];
  return [after, [log('info', 'desired config changed', { config: shortHash(config) }), ...cancel, ...aborts, ...actions]];
}

/** Stops every epoch that has not taken over yet: the new config starts once they exited. */
function abortStarting(state: State): Step {
  const starting = state.live.filter((entry) => !entry.tookOver && !entry.aborting);
  const live = state.live.map((entry) => (starting.includes(entry) ? { ...entry, aborting: true } : entry));
  return [{ ...state, live }, starting.map((entry): Action => ({ type: 'abort-epoch', epoch: entry.epoch }))];
}

/**
 * Starts a new epoch when the desired config is not the one running. Never
 * on top of an epoch that is still starting: its number may never become a
 * process (validation refused it), and Envoy refuses a child of a parent that
 * is still initializing anyway. The newest config starts once it took over
 * or exited.
 */
function reconcile(state: State): Step {
  if (shuttingDown(state) || state.desired === undefined || state.desired === state.current) {
    return [{ ...state, reconcileWhenSettled: false }, []];
  }
  // Held before "wait for the starting epoch": a restart into nothing is the worse outcome, and the hold is logged.
  if (state.gate.state !== 'open' && state.live.length > 0) return holdRestart(state);
  if (state.live.some((entry) => entry.aborting || !entry.tookOver)) return [{ ...state, reconcileWhenSettled: true }, []];
  const epoch = Math.max(-1, ...state.live.map((entry) => entry.epoch)) + 1;
  const live = [...state.live, { epoch, config: state.desired, aborting: false, tookOver: false }];
  const next = { ...state, live, current: state.desired, reconcileWhenSettled: false };
  return [next, [{ type: 'start-epoch', epoch, config: state.desired }]];
}

function holdRestart(state: State): Step {
  if (state.gate.state !== 'closed') return [state, []];
  const fields = { config: shortHash(state.desired!), reason: state.gate.reason, serving: state.live.map((entry) => entry.epoch) };
  return [
    { ...state, gate: { state: 'holding', reason: state.gate.reason } },
    [log('warn', 'hot restart held: the running epoch keeps serving until the new one can get its config', fields)],
  ];
}

function onGateChanged(state: State, event: Extract<Event, { type: 'gate-changed' }>): Step {
  const held = state.gate.state === 'holding';
  // A restart held behind the gate stays held when it closes again for another reason.
  if (!event.open) return [{ ...state, gate: { state: held ? 'holding' : 'closed', reason: event.reason } }, []];
  const next: State = { ...state, gate: { state: 'open' } };
  if (!held) return [next, []];
  const [after, actions] = reconcile(next);
  return [after, [log('info', 'hot restart released', { reason: event.reason }), ...actions]];
}

function onEpochExited(state: State, event: ExitEvent): Step {
  const exited = state.live.find((entry) => entry.epoch === event.epoch);
  const live = state.live.filter((entry) => entry !== exited);
  const failure = event.kind === 'failed' || event.kind === 'rejected';
  const next = { ...state, live, current: currentConfig(live), lastFailure: failure ? event.detail : state.lastFailure };
  const actions: Action[] = [...exitLog(event), { type: 'remove-bootstrap', epoch: event.epoch }];
  if (shuttingDown(state)) return exitWhileShuttingDown(next, event, actions);
  const [after, more] = afterExit(next, event, exited);
  return [after, [...actions, ...more]];
}

function afterExit(state: State, event: ExitEvent, exited: LiveEpoch | undefined): Step {
  switch (event.kind) {
    case 'failed':
    case 'rejected':
      return afterFailure(state, event, exited);
    case 'parent-initializing':
      // Not a failure: the same epoch is tried again once the parent is up.
      return withRetry(state, state.policy.parentInitializingDelayMs ?? 1000);
    case 'aborted':
      if (state.reconcileWhenSettled) return reconcile(state);
      return state.retryScheduled || state.live.length > 0 ? [state, []] : scheduleRetry(state, event.epoch);
    case 'normal':
      if (state.reconcileWhenSettled) return reconcile(state);
      if (state.live.length > 0 || state.retryScheduled) return [state, []];
      // The only Envoy left on its own (e.g. admin /quitquitquit): we end too.
      return [state, [log('info', 'envoy exited on its own; stopping', {}), { type: 'exit' }]];
  }
}

/** Marks the epoch as having taken over (during the shutdown drain it is drained too). */
function onEpochLive(state: State, epoch: number): Step {
  const entry = state.live.find((candidate) => candidate.epoch === epoch);
  if (!entry) return [state, []];
  const live = state.live.map((candidate) => (candidate === entry ? { ...candidate, tookOver: true } : candidate));
  const next = { ...state, live };
  if (shuttingDown(state)) return drainTakeover(next, entry);
  const stable: Action = { type: 'schedule', event: { type: 'epoch-stable', epoch }, delayMs: state.policy.stableAfterMs };
  const [after, actions] = next.reconcileWhenSettled ? reconcile(next) : [next, []];
  return [after, [stable, ...actions]];
}

function onEpochStable(state: State, epoch: number): Step {
  const entry = state.live.find((candidate) => candidate.epoch === epoch);
  if (!entry || entry.aborting || state.budget === state.policy.budget) return [state, []];
  return [{ ...state, budget: state.policy.budget }, [log('info', 'epoch stayed live; retry budget refilled', { epoch, budget: state.policy.budget })]];
}

/** The config of the newest epoch that is not on its way out. */
function currentConfig(live: readonly LiveEpoch[]): string | undefined {
  return live.filter((entry) => !entry.aborting).at(-1)?.config;
}

/** The line for how an epoch ended; failures get theirs from `afterFailure`. */
function exitLog(event: ExitEvent): Action[] {
  const fields = { epoch: event.epoch, detail: event.detail };
  switch (event.kind) {
    case 'aborted':
      return [log('info', 'epoch aborted', fields)];
    case 'normal':
      return [log('info', 'epoch exited normally', fields)];
    case 'parent-initializing':
      return [log('info', 'previous epoch still initializing; will retry the same epoch', fields)];
    case 'failed':
    case 'rejected':
      return [];
  }
}
