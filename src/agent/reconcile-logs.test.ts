import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { policy, A, B, run, changed, exited, live, start, retryIn, remove, abort } from '../../test/support/reconcile-run.ts';
import { initialState, reduce } from './reconcile.ts';
import type { Action, Event, ExitKind, LogLevel, State } from './reconcile-types.ts';

/*
 * What the last event of each row does, its log lines included: operators act
 * on these lines (level, message and fields), so each row names them exactly.
 */

const C = 'c'.repeat(64);
/** The configs as log lines name them (their first 12 hex digits). */
const [a, b, c] = [A.slice(0, 12), B.slice(0, 12), C.slice(0, 12)] as const;
const line = (level: LogLevel, message: string, fields: Record<string, unknown>): Action => ({ type: 'log', level, message, fields });
const exit = (epoch: number, kind: ExitKind, detail = `detail ${epoch}`): Event => ({ type: 'epoch-exited', epoch, kind, detail });
const replace = (config: string): Event => ({ type: 'config-changed', config, replaceStarting: true });
const gate = (open: boolean, reason: string): Event => ({ type: 'gate-changed', open, reason });
const stable = (epoch: number): Event => ({ type: 'epoch-stable', epoch });
const retryDue: Event = { type: 'retry-due' };
const shutdown: Event = { type: 'shutdown' };
const desired = (config: string) => line('info', 'desired config changed', { config });

interface Row {
  name: string;
  events: Event[];
  /** The last event's actions, log lines included. */
  actions: Action[];
  /** Sets the budget before the last event (0: spent). */
  budget?: number;
  from?: State;
  retryScheduled?: boolean;
}

/** Runs every event but the last, then returns the last one's step whole. */
function last(row: Row): { state: State; actions: Action[] } {
  const before = run(row.events.slice(0, -1), row.from);
  const from = row.budget === undefined ? before.state : { ...before.state, budget: row.budget };
  const [state, actions] = reduce(from, row.events.at(-1)!);
  return { state, actions };
}

function table(rows: Row[]): void {
  for (const row of rows) {
    it(row.name, () => {
      const { state, actions } = last(row);
      assert.deepEqual(actions, row.actions);
      if (row.retryScheduled !== undefined) assert.equal(state.retryScheduled, row.retryScheduled);
    });
  }
}

describe('reduce logs: desired config and the restart gate', () => {
  table([
    { name: 'a new config is logged with its short hash', events: [changed(A)], actions: [desired(a), start(0, A)] },
    {
      name: 'replaceStarting again aborts the starting epoch only once',
      events: [changed(A), replace(B), replace(C)],
      actions: [desired(c)],
    },
    {
      name: 'a repeated LIVE of the parent does not count its starting child as taken over',
      events: [changed(A), live(0), changed(B), live(0), changed(C)],
      actions: [desired(c)],
    },
    {
      name: 'back to the running config, the lone epoch exiting normally ends the agent: nothing is left to reconcile',
      events: [changed(A), live(0), changed(B), exit(1, 'failed'), changed(A), exit(0, 'normal')],
      actions: [
        line('info', 'epoch exited normally', { epoch: 0, detail: 'detail 0' }),
        remove(0),
        line('info', 'envoy exited on its own; stopping', {}),
        { type: 'exit' },
      ],
    },
    {
      name: 'a starting epoch that exits normally lets the newest config start at once',
      events: [changed(A), live(0), changed(B), changed(C), exit(1, 'normal')],
      actions: [line('info', 'epoch exited normally', { epoch: 1, detail: 'detail 1' }), remove(1), start(1, C)],
    },
    {
      name: 'a held restart names the config, the gate reason and the serving epochs',
      events: [changed(A), live(0), gate(false, 'upstream unreachable'), changed(B)],
      actions: [
        desired(b),
        line('warn', 'hot restart held: the running epoch keeps serving until the new one can get its config', {
          config: b,
          reason: 'upstream unreachable',
          serving: [0],
        }),
      ],
    },
    { name: 'a gate that opens with nothing held says nothing', events: [changed(A), live(0), gate(false, 'down'), gate(true, 'up')], actions: [] },
    {
      name: 'a released restart names why the gate opened',
      events: [changed(A), live(0), gate(false, 'down'), changed(B), gate(true, 'upstream reachable')],
      actions: [line('info', 'hot restart released', { reason: 'upstream reachable' }), start(1, B)],
    },
  ]);

  it('a spawned epoch gets its pid, the others keep theirs', () => {
    const spawned = (epoch: number, pid: number): Event => ({ type: 'epoch-spawned', epoch, pid });
    const { state } = run([changed(A), spawned(0, 100), live(0), changed(B), spawned(1, 200)]);
    assert.deepEqual(state.live.map((entry) => [entry.epoch, entry.pid]), [[0, 100], [1, 200]]);
  });
});

describe('reduce logs: exits, retries and the budget', () => {
  const spent = (config: string, lastFailure: string | undefined) =>
    line('error', 'retry budget spent trying to reach the desired config; exiting', { epoch: 0, config, lastFailure });
  const exitSpent = (config: string, why: string): Action => ({
    type: 'exit',
    error: 'RETRY_BUDGET_SPENT',
    reason: `retry budget spent trying to start Envoy with config ${config}: ${why}`,
  });
  table([
    {
      name: 'a lone epoch that fails: the error, then the retry with its delay and the budget left',
      events: [changed(A), exit(0, 'failed')],
      actions: [
        remove(0),
        line('warn', 'epoch terminated with an error', { epoch: 0, config: a, detail: 'detail 0' }),
        line('info', 'retry scheduled', { epoch: 0, config: a, delayMs: 200, budget: 2 }),
        retryIn(200),
      ],
    },
    {
      name: 'an epoch aborted with the others fails on its way out: no serving epoch is left, the pending retry stands',
      events: [changed(A), live(0), changed(B), live(1), changed(C), exit(1, 'failed'), exit(2, 'failed')],
      actions: [
        remove(2),
        line('warn', 'epoch terminated with an error', { epoch: 2, config: c, detail: 'detail 2' }),
        line('debug', 'retry already scheduled', { epoch: 2 }),
      ],
    },
    {
      name: 'the serving epoch fails while the starting one is being replaced: no second abort of it',
      events: [changed(A), live(0), changed(B), replace(C), exit(0, 'failed')],
      actions: [
        remove(0),
        line('warn', 'epoch terminated with an error; aborting all epochs', { epoch: 0, config: a, detail: 'detail 0' }),
        line('info', 'retry scheduled', { epoch: 0, config: c, delayMs: 200, budget: 2 }),
        retryIn(200),
      ],
    },
    {
      name: 'a rejected new config with the budget spent: the serving epochs keep serving, the rejection is the last failure',
      events: [changed(A), live(0), changed(B), exit(1, 'rejected', 'bad listener')],
      budget: 0,
      actions: [
        remove(1),
        line('warn', 'new epoch failed before taking over; the serving epochs keep serving and the new config is retried', {
          epoch: 1,
          config: b,
          detail: 'bad listener',
          serving: [0],
        }),
        line('error', 'retry budget spent on the new config; the serving epochs keep the old one until the config changes', {
          epoch: 1,
          config: b,
          lastFailure: 'bad listener',
          serving: [0],
        }),
      ],
    },
    {
      name: 'an abort is not a failure: the budget-spent exit names the crash before it',
      events: [changed(A), exit(0, 'failed', 'crash'), retryDue, exit(0, 'aborted', 'killed')],
      budget: 0,
      actions: [line('info', 'epoch aborted', { epoch: 0, detail: 'killed' }), remove(0), spent(a, 'crash'), exitSpent(a, 'crash')],
    },
    {
      name: 'no retries at all (budget 0) and no failure: the exit says none was recorded',
      from: initialState({ ...policy, budget: 0 }),
      events: [changed(A), exit(0, 'aborted')],
      actions: [line('info', 'epoch aborted', { epoch: 0, detail: 'detail 0' }), remove(0), spent(a, undefined), exitSpent(a, 'no failure recorded')],
    },
    {
      name: 'an aborted epoch exits while the retry is pending: no second retry',
      events: [changed(A), live(0), changed(B), live(1), exit(1, 'failed'), exit(0, 'aborted')],
      actions: [line('info', 'epoch aborted', { epoch: 0, detail: 'detail 0' }), remove(0)],
    },
    {
      name: 'a parent aborted after its child took over: the child serves, no retry',
      events: [changed(A), live(0), changed(B), live(1), exit(0, 'aborted')],
      actions: [line('info', 'epoch aborted', { epoch: 0, detail: 'detail 0' }), remove(0)],
      retryScheduled: false,
    },
    {
      name: 'a parent still initializing: the same epoch is retried later',
      events: [changed(A), live(0), changed(B), exit(1, 'parent-initializing')],
      actions: [line('info', 'previous epoch still initializing; will retry the same epoch', { epoch: 1, detail: 'detail 1' }), remove(1), retryIn(1000)],
    },
    {
      name: 'an epoch that stays LIVE refills the budget, saying so',
      events: [changed(A), exit(0, 'failed'), retryDue, live(0), stable(0)],
      actions: [line('info', 'epoch stayed live; retry budget refilled', { epoch: 0, budget: 3 })],
    },
    {
      name: 'the stable timer of a parent that has left refills nothing',
      events: [changed(A), live(0), changed(B), live(1), exit(0, 'normal'), changed(C), exit(2, 'failed'), retryDue, stable(0)],
      actions: [],
    },
    {
      name: 'the stable timer of an epoch being aborted refills nothing',
      events: [changed(A), live(0), changed(B), live(1), exit(1, 'failed'), stable(0)],
      actions: [],
    },
  ]);
});

describe('reduce logs: shutdown', () => {
  table([
    {
      name: 'a shutdown with a retry pending cancels it and drains the serving epochs, naming them',
      events: [changed(A), live(0), changed(B), exit(1, 'failed'), shutdown],
      actions: [{ type: 'cancel-retry' }, line('info', 'draining before exit', { epochs: [0] }), { type: 'drain' }],
      retryScheduled: false,
    },
    {
      name: 'a new epoch rejected during the drain is logged with its detail; the drain goes on',
      events: [changed(A), live(0), changed(B), shutdown, exit(1, 'rejected')],
      actions: [line('warn', 'epoch terminated with an error while stopping', { epoch: 1, detail: 'detail 1' }), remove(1)],
    },
    {
      name: 'a failure while stopping is logged with its detail, then the exit',
      events: [changed(A), shutdown, exit(0, 'failed')],
      actions: [line('warn', 'epoch terminated with an error while stopping', { epoch: 0, detail: 'detail 0' }), remove(0), { type: 'exit' }],
    },
    {
      name: 'an epoch stopped after the drain is no error: the next one stops',
      events: [changed(A), live(0), changed(B), live(1), shutdown, { type: 'drained' }, exit(1, 'aborted')],
      actions: [line('info', 'epoch aborted', { epoch: 1, detail: 'detail 1' }), remove(1), abort(0)],
    },
    {
      name: 'an epoch that takes over during the drain is drained too, naming it',
      events: [changed(A), live(0), changed(B), shutdown, live(1)],
      actions: [line('info', 'epoch took over during the shutdown drain; draining it too', { epoch: 1 }), { type: 'drain-listeners', epoch: 1 }],
    },
    {
      name: 'an epoch already being aborted that reports LIVE during the drain is not drained',
      events: [changed(A), live(0), changed(B), replace(C), shutdown, live(1)],
      actions: [],
    },
  ]);
});
