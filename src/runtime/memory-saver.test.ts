import assert from 'node:assert/strict';
import { test } from 'node:test';
import { saveMemoryOnceLive } from './memory-saver.ts';

test('memory-saver mode: set once, at the first LIVE epoch, never before nor again', () => {
  const set: string[] = [];
  const onEvent = saveMemoryOnceLive((flags) => set.push(flags));
  onEvent({ type: 'config-changed', config: 'c' });
  onEvent({ type: 'epoch-spawned', epoch: 0, pid: 1 });
  assert.deepEqual(set, [], 'not while the agent starts (its start CPU)');
  onEvent({ type: 'epoch-live', epoch: 0 });
  assert.deepEqual(set, ['--memory-saver-mode']);
  onEvent({ type: 'epoch-live', epoch: 1 });
  assert.deepEqual(set, ['--memory-saver-mode'], 'a later epoch sets nothing more');
});
