import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { policy, A, B, run, changed, exited, live, start, retryIn, remove, abort, stableIn } from '../../test/support/reconcile-run.ts';
import { initialState, reduce } from './reconcile.ts';
import type { Action, Event } from './reconcile-types.ts';

describe('reduce: desired config', () => {
  it('starts epoch 0 on the first config', () => {
    const { state, actions } = run([changed(A)]);
    assert.deepEqual(actions, [start(0, A)]);
    assert.equal(state.current, A);
    assert.deepEqual(state.live.map((entry) => entry.epoch), [0]);
  });

  it('does nothing when the desired config is the current one', () => {
    const { actions } = run([changed(A), changed(A)]);
    assert.deepEqual(actions, [start(0, A)]);
  });

  it('hot-restarts into the highest live epoch + 1 on a new config', () => {
    const { actions } = run([changed(A), live(0), changed(B)]);
    assert.deepEqual(actions.filter((action) => action.type !== 'schedule'), [start(0, A), start(1, B)]);
  });

  it('never starts on top of an epoch still starting: the newest config follows once it took over', () => {
    const starting = run([changed(A), live(0), changed(B), changed(A.replace('a', 'c'))]);
    assert.deepEqual(starting.actions.filter((action) => action.type === 'start-epoch'), [start(0, A), start(1, B)], 'epoch 1 is still starting');
    const { actions } = run([live(1)], starting.state);
    assert.deepEqual(actions.at(-1), start(2, A.replace('a', 'c')));
  });

  it('replaceStarting (the Delta→SotW fallback): an epoch not LIVE yet is aborted and the new config starts as soon as it exited', () => {
    const replaced = run([changed(A), { type: 'config-changed', config: B, replaceStarting: true }]);
    assert.deepEqual(replaced.actions, [start(0, A), abort(0)]);
    const { actions } = run([exited(0, 'aborted')], replaced.state);
    assert.deepEqual(actions, [remove(0), start(0, B)], 'a cold start: nothing was handed over');
  });

  it('replaceStarting leaves an epoch that took over alone: a normal hot restart', () => {
    const { actions } = run([changed(A), live(0), { type: 'config-changed', config: B, replaceStarting: true }]);
    assert.deepEqual(actions.filter((action) => action.type !== 'schedule'), [start(0, A), start(1, B)]);
  });

  it('a config that arrives while the new epoch is refused starts as the same epoch number, once that one is gone', () => {
    const { actions } = run([changed(A), live(0), changed(B), changed(A.replace('a', 'c')), exited(1, 'rejected'), { type: 'retry-due' }]);
    assert.deepEqual(actions.filter((action) => action.type === 'start-epoch'), [start(0, A), start(1, B), start(1, A.replace('a', 'c'))]);
  });

  it('a parent that exits normally after a hot restart is only logged and cleaned up', () => {
    const { state, actions, logs } = run([changed(A), live(0), changed(B), exited(0, 'normal')]);
    assert.deepEqual(actions.filter((action) => action.type !== 'schedule').slice(2), [remove(0)]);
    assert.ok(logs.includes('epoch exited normally'));
    assert.equal(state.current, B);
    assert.deepEqual(state.live.map((entry) => entry.epoch), [1]);
  });

  it('numbers epochs from the highest live one, not from a counter', () => {
    const { actions } = run([changed(A), live(0), changed(B), live(1), exited(0, 'normal'), changed(A)]);
    assert.deepEqual(actions.at(-1), start(2, A));
  });

  it('ignores config changes once shutting down', () => {
    const { actions } = run([changed(A), { type: 'shutdown' }, changed(B)]);
    assert.deepEqual(actions, [start(0, A), { type: 'drain' }]);
  });
});

describe('reduce: failures and retries', () => {
  it('an epoch that had taken over fails: every other epoch is aborted and one retry scheduled', () => {
    const { state, actions, logs } = run([changed(A), live(0), changed(B), live(1), exited(1, 'failed')]);
    assert.deepEqual(actions.filter((action) => action.type !== 'schedule' || action.event.type === 'retry-due').slice(2), [remove(1), abort(0), retryIn(200)]);
    assert.ok(logs.includes('epoch terminated with an error; aborting all epochs'));
    assert.equal(state.budget, 2);
    assert.equal(state.current, undefined, 'an aborting epoch does not count as current');
  });

  it('the retry waits for aborted epochs to exit, then starts again from epoch 0', () => {
    const before = run([changed(A), live(0), changed(B), live(1), exited(1, 'failed'), { type: 'retry-due' }]);
    assert.deepEqual(before.actions.at(-1), retryIn(200), 'nothing starts while epoch 0 is still exiting');
    const { actions } = run([exited(0, 'aborted')], before.state);
    assert.deepEqual(actions, [remove(0), start(0, B)]);
  });

  it('restarts the same config when the retry comes due while an aborted epoch of that config is exiting', () => {
    // Epochs 0 and 2 run A, epoch 1 runs B, took over and fails: nothing of A may be taken as running.
    const { actions } = run([
      changed(A),
      live(0),
      changed(B),
      live(1),
      changed(A),
      exited(1, 'failed'),
      { type: 'retry-due' },
      exited(0, 'aborted'),
      exited(2, 'aborted'),
    ]);
    assert.deepEqual(actions.at(-1), start(0, A));
    assert.equal(
      actions.filter((action) => action.type === 'schedule' && action.event.type === 'retry-due').length,
      1,
      'one retry, no second one for the aborted exits',
    );
  });

  it('backs off 200 ms × 2^n and exits 1 with the failing config once the budget is spent', () => {
    const events: Event[] = [changed(A)];
    for (let attempt = 0; attempt < 4; attempt++) events.push(exited(0, 'failed'), { type: 'retry-due' });
    const { actions, logs } = run(events.slice(0, -1));
    const delays = actions.filter((action) => action.type === 'schedule').map((action) => action.delayMs);
    assert.deepEqual(delays, [200, 400, 800]);
    assert.deepEqual(actions.at(-1), {
      type: 'exit',
      error: 'RETRY_BUDGET_SPENT',
      reason: `retry budget spent trying to start Envoy with config ${A.slice(0, 12)}: detail 0`,
    });
    assert.ok(logs.includes('retry budget spent trying to reach the desired config; exiting'));
  });

  it('names the config and the last failure when the budget is spent', () => {
    const [, actions] = reduce({ ...run([changed(A)]).state, budget: 0 }, exited(0, 'failed'));
    const line = actions.find((action) => action.type === 'log' && action.level === 'error');
    assert.ok(line?.type === 'log');
    assert.equal(line.fields.config, A.slice(0, 12));
    assert.equal(line.fields.lastFailure, 'detail 0');
  });

  it('a new desired config refills the budget and cancels the pending retry', () => {
    const { state, actions } = run([changed(A), exited(0, 'failed'), changed(B)]);
    assert.deepEqual(actions.slice(-2), [{ type: 'cancel-retry' }, start(0, B)]);
    assert.equal(state.budget, policy.budget);
    assert.equal(state.retryScheduled, false);
  });

  it('an epoch that stays LIVE for stableAfterMs refills the budget', () => {
    const failedOnce = run([changed(A), exited(0, 'failed'), { type: 'retry-due' }, live(0)]);
    assert.deepEqual(failedOnce.actions.at(-1), { type: 'schedule', event: { type: 'epoch-stable', epoch: 0 }, delayMs: 60_000 });
    const { state, logs } = run([{ type: 'epoch-stable', epoch: 0 }], failedOnce.state);
    assert.equal(state.budget, policy.budget);
    assert.ok(logs.includes('epoch stayed live; retry budget refilled'));
  });

  it('a stable timer of an epoch that is gone refills nothing', () => {
    const failed = run([changed(A), exited(0, 'failed')]);
    const { state } = run([{ type: 'epoch-stable', epoch: 0 }], failed.state);
    assert.equal(state.budget, policy.budget - 1);
  });

  it('"parent still initializing" retries the same epoch without spending budget', () => {
    const { state, actions } = run([changed(A), live(0), changed(B), exited(1, 'parent-initializing'), { type: 'retry-due' }]);
    assert.deepEqual(actions.filter((action) => action.type !== 'schedule' || action.event.type === 'retry-due').slice(2), [
      remove(1),
      retryIn(1000),
      start(1, B),
    ]);
    assert.equal(state.budget, policy.budget);
  });

  it('a lone epoch that exits normally on its own ends the agent with 0', () => {
    const { actions } = run([changed(A), exited(0, 'normal')]);
    assert.deepEqual(actions.at(-1), { type: 'exit' });
  });

  it('an unexpected abort of the last epoch is treated as a failure to recover from', () => {
    const { actions } = run([changed(A), exited(0, 'aborted')]);
    assert.deepEqual(actions.slice(1), [remove(0), retryIn(200)]);
  });
});

describe('reduce: a new epoch that fails keeps the serving epochs', () => {
  const serving = [changed(A), live(0), changed(B)];

  it('fails before taking over: no epoch is aborted, the new config is retried with backoff', () => {
    const { state, actions, logs } = run([...serving, exited(1, 'failed'), { type: 'retry-due' }]);
    assert.deepEqual(actions.slice(-3), [remove(1), retryIn(200), start(1, B)]);
    assert.ok(!actions.some((action) => action.type === 'abort-epoch'), 'epoch 0 keeps serving');
    assert.ok(logs.includes('new epoch failed before taking over; the serving epochs keep serving and the new config is retried'));
    assert.deepEqual(state.live.map((entry) => entry.epoch), [0, 1]);
  });

  it('the failure line names the new config, the epochs that keep serving and why', () => {
    const [, actions] = reduce(run(serving).state, exited(1, 'failed'));
    const line = actions.find((action) => action.type === 'log' && action.level === 'warn');
    assert.ok(line?.type === 'log');
    assert.deepEqual(line.fields, { epoch: 1, config: B.slice(0, 12), detail: 'detail 1', serving: [0] });
  });

  it('Envoy rejecting the new config (validation) is handled the same way, not as bad input', () => {
    const { actions } = run([...serving, exited(1, 'rejected')]);
    assert.deepEqual(actions.slice(-2), [remove(1), retryIn(200)]);
  });

  it('once the budget is spent the serving epoch keeps the old config, no exit; a new config starts again', () => {
    const events: Event[] = [...serving];
    for (let attempt = 0; attempt < 3; attempt++) events.push(exited(1, 'failed'), { type: 'retry-due' });
    const spent = run([...events, exited(1, 'failed')]);
    assert.ok(!spent.actions.some((action) => action.type === 'exit' || action.type === 'abort-epoch'));
    assert.ok(spent.logs.includes('retry budget spent on the new config; the serving epochs keep the old one until the config changes'));
    assert.equal(spent.state.current, A);
    const { actions } = run([changed(B)], spent.state);
    assert.deepEqual(actions, [], 'the same config again changes nothing');
    assert.deepEqual(run([changed(A)], spent.state).actions, [], 'back to the running config: nothing to do');
    assert.deepEqual(run([changed(B.replace('b', 'c'))], spent.state).actions, [start(1, B.replace('b', 'c'))]);
  });

  it('a superseded epoch that fails while draining takes nothing down', () => {
    const { actions, logs } = run([...serving, live(1), exited(0, 'failed')]);
    assert.deepEqual(actions.filter((action) => action.type !== 'schedule').slice(2), [remove(0)]);
    assert.ok(logs.includes('a superseded epoch failed while draining; the newer epoch keeps serving'));
  });

  it('Envoy rejecting its config with no other epoch running is bad input: exit 2 with its reason', () => {
    const { actions, logs } = run([changed(A), exited(0, 'rejected')]);
    assert.deepEqual(actions.at(-1), { type: 'exit', error: 'ENVOY_REJECTED', reason: 'detail 0' });
    assert.ok(logs.includes('Envoy rejects its configuration; exiting'));
  });
});

describe('reduce: the restart gate', () => {
  const gate = (open: boolean, reason = open ? 'upstream reachable' : 'upstream unreachable, nothing kept'): Event => ({ type: 'gate-changed', open, reason });
  const table: { name: string; events: Event[]; actions: Action[]; held: boolean; logs?: string[] }[] = [
    {
      name: 'a rotation behind a closed gate is held; the running epoch keeps serving',
      events: [changed(A), live(0), gate(false), changed(B)],
      actions: [start(0, A), stableIn(0)],
      held: true,
      logs: ['hot restart held: the running epoch keeps serving until the new one can get its config'],
    },
    {
      name: 'the gate opening releases the held restart',
      events: [changed(A), live(0), gate(false), changed(B), gate(true)],
      actions: [start(0, A), stableIn(0), start(1, B)],
      held: false,
      logs: ['hot restart released'],
    },
    { name: 'a first start is never held: nothing serves yet', events: [gate(false), changed(A)], actions: [start(0, A)], held: false },
    {
      name: 'a retry after every epoch failed is never held',
      events: [changed(A), gate(false), exited(0, 'failed'), { type: 'retry-due' }],
      actions: [start(0, A), remove(0), retryIn(200), start(0, A)],
      held: false,
    },
    {
      name: 'a held restart stays held when the gate closes again for another reason',
      events: [changed(A), live(0), gate(false), changed(B), gate(false, 'certificate expiring'), changed(A + B)],
      actions: [start(0, A), stableIn(0)],
      held: true,
      logs: ['hot restart held: the running epoch keeps serving until the new one can get its config'],
    },
    {
      name: 'an open gate changes nothing',
      events: [changed(A), live(0), gate(true), changed(B)],
      actions: [start(0, A), stableIn(0), start(1, B)],
      held: false,
    },
    {
      name: 'held once: a second change while held is not logged again and the newest config starts',
      events: [changed(A), live(0), gate(false), changed(B), changed(A + B), gate(true)],
      actions: [start(0, A), stableIn(0), start(1, A + B)],
      held: false,
    },
  ];
  for (const row of table) {
    it(row.name, () => {
      const { state, actions, logs } = run(row.events);
      assert.deepEqual(actions, row.actions);
      assert.equal(state.gate.state === 'holding', row.held);
      for (const line of row.logs ?? []) assert.equal(logs.filter((entry) => entry === line).length, 1, line);
    });
  }
});
