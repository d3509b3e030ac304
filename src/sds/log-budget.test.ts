import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LogBudget } from './log-budget.ts';

test('a log budget lets `lines` through per window, then reports how many it held back', () => {
  let now = 0;
  const budget = new LogBudget({ lines: 2, windowMs: 1000, now: () => now });
  assert.deepEqual([budget.take(), budget.take(), budget.take(), budget.take()], [{}, {}, undefined, undefined]);
  now = 999;
  assert.equal(budget.take(), undefined);
  now = 1000;
  assert.deepEqual(budget.take(), { suppressed: 3 });
  assert.deepEqual(budget.take(), {});
});
