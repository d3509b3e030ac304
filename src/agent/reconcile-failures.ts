/**
 * What a failed epoch takes down, and the retry backoff: the failure rules
 * of the reconcile reducer (listed at the top of `reconcile.ts`), pure like it.
 */
import { shortHash } from '../shared/short-hash.ts';
import type { Action, ExitEvent, LiveEpoch, LogLevel, State, Step } from './reconcile-types.ts';

/** Decides what a failed epoch takes down. */
export function afterFailure(state: State, event: ExitEvent, exited: LiveEpoch | undefined): Step {
  const fields = { epoch: event.epoch, config: exited ? shortHash(exited.config) : undefined, detail: event.detail };
  const serving = state.live.filter((entry) => !entry.aborting).map((entry) => entry.epoch);
  if (exited?.tookOver && !state.live.some((entry) => entry.tookOver && entry.epoch > exited.epoch)) {
    const [aborted, abortActions] = abortAll(state);
    const [after, retryActions] = scheduleRetry(aborted, event.epoch);
    return [after, [log('warn', 'epoch terminated with an error; aborting all epochs', fields), ...abortActions, ...retryActions]];
  }
  if (exited?.tookOver) return [state, [log('warn', 'a superseded epoch failed while draining; the newer epoch keeps serving', fields)]];
  if (serving.length > 0) {
    const [after, retryActions] = scheduleRetry(state, event.epoch);
    return [
      after,
      [
        log('warn', 'new epoch failed before taking over; the serving epochs keep serving and the new config is retried', { ...fields, serving }),
        ...retryActions,
      ],
    ];
  }
  if (event.kind === 'rejected')
    return [state, [log('error', 'Envoy rejects its configuration; exiting', fields), { type: 'exit', error: 'ENVOY_REJECTED', reason: event.detail }]];
  return scheduleRetry(state, event.epoch, [log('warn', 'epoch terminated with an error', fields)]);
}

/** One retry after initialDelay × 2^(used budget), or what a spent budget means. */
export function scheduleRetry(state: State, epoch: number, before: Action[] = []): Step {
  if (state.retryScheduled) return [state, [...before, log('debug', 'retry already scheduled', { epoch })]];
  if (state.budget <= 0) return budgetSpent(state, epoch, before);
  const config = state.desired ? shortHash(state.desired) : undefined;
  const delayMs = state.policy.initialDelayMs * 2 ** (state.policy.budget - state.budget);
  const [after, actions] = withRetry({ ...state, budget: state.budget - 1 }, delayMs);
  return [after, [...before, log('info', 'retry scheduled', { epoch, config, delayMs, budget: state.budget - 1 }), ...actions]];
}

/** With epochs still serving, give up on the new config only; else exit 1. */
function budgetSpent(state: State, epoch: number, before: Action[]): Step {
  const fields = { epoch, config: state.desired ? shortHash(state.desired) : undefined, lastFailure: state.lastFailure };
  const serving = state.live.filter((entry) => !entry.aborting).map((entry) => entry.epoch);
  if (serving.length > 0) {
    return [
      state,
      [...before, log('error', 'retry budget spent on the new config; the serving epochs keep the old one until the config changes', { ...fields, serving })],
    ];
  }
  const reason = `retry budget spent trying to start Envoy with config ${fields.config}: ${state.lastFailure ?? 'no failure recorded'}`;
  return [
    state,
    [...before, log('error', 'retry budget spent trying to reach the desired config; exiting', fields), { type: 'exit', error: 'RETRY_BUDGET_SPENT', reason }],
  ];
}

export function withRetry(state: State, delayMs: number): Step {
  if (state.retryScheduled) return [state, []];
  return [{ ...state, retryScheduled: true }, [{ type: 'schedule', event: { type: 'retry-due' }, delayMs }]];
}

function abortAll(state: State): Step {
  const targets = state.live.filter((entry) => !entry.aborting);
  const live = state.live.map((entry) => ({ ...entry, aborting: true }));
  return [{ ...state, live, current: undefined }, targets.map((entry) => ({ type: 'abort-epoch', epoch: entry.epoch }) as const)];
}

export function log(level: LogLevel, message: string, fields: Record<string, unknown>): Action {
  return { type: 'log', level, message, fields };
}
