import assert from 'node:assert/strict';
import { test } from 'node:test';
import { withinSync } from './sync-deadline.ts';

// One test: the spin it provokes makes every later withinSync of this process fail fast, by design.
test('withinSync returns what the body returns, rethrows its errors, refuses async bodies, and fails a spinning body by name, then every later body at once', () => {
  assert.equal(
    withinSync('a quick body', () => 42),
    42,
  );
  assert.throws(() => withinSync('a failing body', () => assert.equal(1, 2)), assert.AssertionError);
  assert.throws(() => withinSync('an async body', async () => undefined), /an async body: withinSync is for synchronous bodies/);

  const started = performance.now();
  assert.throws(
    () =>
      withinSync(
        'the spinning body',
        () => {
          for (;;);
        },
        100,
      ),
    /^Error: the spinning body still running after 100 ms: a synchronous loop that does not end$/,
  );
  assert.ok(performance.now() - started < 5000, 'stopped by the deadline');
  assert.throws(() => withinSync('a later body', () => 1), /^Error: a later body not run: the spinning body spun past its deadline earlier in this process$/);
});
