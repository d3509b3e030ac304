/**
 * The reconcile reducer once a shutdown began (phases `draining` and
 * `stopping`): drain every epoch, then stop them newest first; pure like it.
 */
import { log } from './reconcile-failures.ts';
import type { Action, ExitEvent, LiveEpoch, State, Step } from './reconcile-types.ts';

export function onShutdown(state: State): Step {
  if (state.phase !== 'running') return [state, []];
  const next: State = { ...state, phase: 'draining', retryScheduled: false };
  const cancel: Action[] = state.retryScheduled ? [{ type: 'cancel-retry' }] : [];
  if (state.live.length === 0) return [next, [...cancel, { type: 'exit' }]];
  if (state.drainedEarly) {
    const [after, stops] = stopNewest({ ...next, phase: 'stopping' });
    return [after, [...cancel, log('info', 'already drained by /drain; stopping without a second drain', {}), ...stops]];
  }
  return [next, [...cancel, log('info', 'draining before exit', { epochs: state.live.map((entry) => entry.epoch) }), { type: 'drain' }]];
}

/**
 * An epoch ended while shutting down (`state` is without it already, `done`
 * logs its end and removes its bootstrap): no retry; the last one out exits 0.
 */
export function exitWhileShuttingDown(state: State, event: ExitEvent, done: readonly Action[]): Step {
  const failed = event.kind === 'failed' || event.kind === 'rejected';
  const actions = failed ? [log('warn', 'epoch terminated with an error while stopping', { epoch: event.epoch, detail: event.detail }), ...done] : [...done];
  if (state.live.length === 0) return [state, [...actions, { type: 'exit' }]];
  // A parent leaving mid-drain (its --parent-shutdown-time-s) must not cut the child's drain short.
  if (state.phase === 'draining') return [state, actions];
  const [after, more] = stopNewest(state);
  return [after, [...actions, ...more]];
}

/**
 * Stops epochs one at a time, newest first. A hot-restart child that stops
 * still messages its parent; were the parent already gone, Envoy would retry
 * that for 10 s before exiting. So the parent goes last.
 */
export function stopNewest(state: State): Step {
  if (state.live.some((entry) => entry.aborting)) return [state, []];
  if (state.live.length === 0) return [state, []];
  const newest = state.live.reduce((a, b) => (b.epoch > a.epoch ? b : a));
  const live = state.live.map((entry) => (entry === newest ? { ...entry, aborting: true } : entry));
  return [{ ...state, live, current: undefined }, [{ type: 'abort-epoch', epoch: newest.epoch }]];
}

/**
 * An epoch took over during the shutdown drain: it would otherwise serve
 * undrained (its parent was drained by the hot restart, or by our admin calls
 * before the child held admin).
 */
export function drainTakeover(state: State, entry: LiveEpoch): Step {
  if (entry.aborting) return [state, []];
  return [
    state,
    [log('info', 'epoch took over during the shutdown drain; draining it too', { epoch: entry.epoch }), { type: 'drain-listeners', epoch: entry.epoch }],
  ];
}

/** POST /drain (native sidecars' preStop): drain now and for good, so the SIGTERM that follows stops at once. */
export function onDrainRequested(state: State): Step {
  return [
    { ...state, drainedEarly: true },
    [log('info', 'drain requested: draining listeners; the next SIGTERM stops without draining again', {}), { type: 'drain-early' }],
  ];
}

/** Cuts the drain short, once. */
export function onHurry(state: State): Step {
  return state.hurried ? [state, []] : [{ ...state, hurried: true }, [{ type: 'cut-drain' }]];
}

/** A fault no caller handled: the agent's own state is in doubt, so every epoch stops now, without a drain. */
export function onFault(state: State): Step {
  const [hurried, cut] = onHurry({ ...state, faulted: true });
  const [after, actions] = onShutdown(hurried);
  return [after, [...cut, ...actions]];
}
