/** The reconcile reducer's table tests' kit: a policy, two configs, a fold over events and the action shorthands. */
import { initialState, reduce } from '../../src/agent/reconcile.ts';
import type { Action, Event, ExitKind, State } from '../../src/agent/reconcile-types.ts';

export const policy = { initialDelayMs: 200, budget: 3, stableAfterMs: 60_000, parentInitializingDelayMs: 1000 };
export const A = 'a'.repeat(64);
export const B = 'b'.repeat(64);

/** Folds events through the reducer; returns the last state and every non-log action. */
export function run(events: readonly Event[], from: State = initialState(policy)): { state: State; actions: Action[]; logs: string[] } {
  let state = from;
  const actions: Action[] = [];
  const logs: string[] = [];
  for (const event of events) {
    const [next, produced] = reduce(state, event);
    state = next;
    for (const action of produced) {
      if (action.type === 'log') logs.push(action.message);
      else actions.push(action);
    }
  }
  return { state, actions, logs };
}

export const changed = (config: string): Event => ({ type: 'config-changed', config });
export const exited = (epoch: number, kind: ExitKind): Event => ({ type: 'epoch-exited', epoch, kind, detail: `detail ${epoch}` });
export const live = (epoch: number): Event => ({ type: 'epoch-live', epoch });
export const start = (epoch: number, config: string): Action => ({ type: 'start-epoch', epoch, config });
export const retryIn = (delayMs: number): Action => ({ type: 'schedule', event: { type: 'retry-due' }, delayMs });
export const remove = (epoch: number): Action => ({ type: 'remove-bootstrap', epoch });
export const abort = (epoch: number): Action => ({ type: 'abort-epoch', epoch });
export const stableIn = (epoch: number): Action => ({ type: 'schedule', event: { type: 'epoch-stable', epoch }, delayMs: 60_000 });
