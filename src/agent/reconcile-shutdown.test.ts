import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { policy, A, B, run, changed, exited, live, remove, abort } from '../../test/support/reconcile-run.ts';
import { initialState, reduce } from './reconcile.ts';
import { stoppedServing } from './reconcile-types.ts';

describe('reduce: shutdown', () => {
  it('POST /drain drains for good and marks the state; the shutdown then stops newest first without a second drain', () => {
    const { state, actions, logs } = run([changed(A), live(0), changed(B), live(1), { type: 'drain-requested' }]);
    assert.deepEqual([state.drainedEarly, stoppedServing(state), actions.at(-1)], [true, true, { type: 'drain-early' }]);
    assert.ok(logs.includes('drain requested: draining listeners; the next SIGTERM stops without draining again'));
    const after = run([{ type: 'shutdown' }, exited(1, 'aborted')], state);
    assert.deepEqual([after.state.phase, after.actions], ['stopping', [abort(1), remove(1), abort(0)]]);
    assert.ok(after.logs.includes('already drained by /drain; stopping without a second drain'));
  });

  it('a fault stops every epoch without a drain, and says so in the state', () => {
    const { state, actions } = run([changed(A), live(0), { type: 'fault' }]);
    assert.deepEqual([state.faulted, state.hurried, state.phase], [true, true, 'draining']);
    assert.deepEqual(actions.slice(-2), [{ type: 'cut-drain' }, { type: 'drain' }], 'the drain runs with its signal already aborted');
    assert.equal(run([{ type: 'fault' }]).actions.at(-1)?.type, 'exit', 'nothing running: exit at once');
  });

  it('hurry cuts the drain once; stoppedServing holds for draining and drained alike', () => {
    const { state, actions } = run([changed(A), live(0), { type: 'shutdown' }, { type: 'hurry' }, { type: 'hurry' }]);
    assert.deepEqual([state.hurried, actions.filter((action) => action.type === 'cut-drain').length], [true, 1]);
    assert.deepEqual([stoppedServing(initialState(policy)), stoppedServing(state)], [false, true]);
  });

  it('drains, then stops the epochs newest first, one at a time, then exits 0', () => {
    const { actions } = run([changed(A), live(0), changed(B), live(1), { type: 'shutdown' }, { type: 'drained' }, exited(1, 'aborted'), exited(0, 'aborted')]);
    assert.deepEqual(actions.filter((action) => action.type !== 'schedule').slice(2), [
      { type: 'drain' },
      abort(1),
      remove(1),
      abort(0),
      remove(0),
      { type: 'exit' },
    ]);
  });

  it('a parent that leaves on its own while its child stops is not aborted', () => {
    const { actions } = run([changed(A), live(0), changed(B), live(1), { type: 'shutdown' }, { type: 'drained' }, exited(0, 'normal'), exited(1, 'aborted')]);
    assert.deepEqual(actions.filter((action) => action.type !== 'schedule').slice(2), [{ type: 'drain' }, abort(1), remove(0), remove(1), { type: 'exit' }]);
  });

  it('waits for epochs already being aborted before stopping the next', () => {
    const { actions } = run([changed(A), live(0), changed(B), live(1), exited(1, 'failed'), { type: 'shutdown' }, { type: 'drained' }]);
    assert.deepEqual(actions.filter((action) => action.type === 'abort-epoch'), [abort(0)], 'the failure aborted epoch 0; the drain adds nothing');
  });

  it('exits at once when no epoch runs, cancelling a pending retry', () => {
    const { actions } = run([changed(A), exited(0, 'failed'), { type: 'shutdown' }]);
    assert.deepEqual(actions.slice(-2), [{ type: 'cancel-retry' }, { type: 'exit' }]);
  });

  it('an epoch that takes over during the shutdown drain is drained too, not left serving', () => {
    const { state, actions, logs } = run([changed(A), live(0), changed(B), { type: 'shutdown' }, live(1)]);
    assert.deepEqual(actions.slice(-2), [{ type: 'drain' }, { type: 'drain-listeners', epoch: 1 }]);
    assert.ok(logs.includes('epoch took over during the shutdown drain; draining it too'));
    assert.deepEqual(run([{ type: 'drained' }], state).actions, [abort(1)], 'then stopped newest first');
  });

  it('a parent that leaves during the drain (parent shutdown time) does not cut the drain short', () => {
    const { state, actions } = run([changed(A), live(0), changed(B), live(1), { type: 'shutdown' }, exited(0, 'normal')]);
    assert.deepEqual(actions.slice(-2), [{ type: 'drain' }, remove(0)], 'epoch 1 keeps draining');
    assert.deepEqual(run([{ type: 'drained' }, exited(1, 'aborted')], state).actions, [abort(1), remove(1), { type: 'exit' }]);
  });

  it('an epoch still starting when the drain is over is stopped first', () => {
    const { actions } = run([changed(A), live(0), changed(B), { type: 'shutdown' }, { type: 'drained' }, exited(1, 'aborted')]);
    assert.deepEqual(actions.slice(-4), [{ type: 'drain' }, abort(1), remove(1), abort(0)]);
  });

  it('a second shutdown changes nothing', () => {
    const first = run([changed(A), { type: 'shutdown' }]);
    const [state, actions] = reduce(first.state, { type: 'shutdown' });
    assert.deepEqual(actions, []);
    assert.equal(state, first.state);
  });

  it('a failure while shutting down schedules no retry', () => {
    const { actions } = run([changed(A), { type: 'shutdown' }, exited(0, 'failed')]);
    assert.deepEqual(actions.slice(2), [remove(0), { type: 'exit' }]);
  });
});
