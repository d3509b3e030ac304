import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';
import { assertGone, type RunningAgent } from './agent.ts';

/**
 * Cleanups for a test's setup, registered as each step succeeds and undone in
 * reverse; every step runs even when an earlier one throws (several errors
 * come back as one SuppressedError). In a test: `await using cleanup = new
 * AsyncDisposableStack()`; in a `describe` that sets up in `before`: `suiteCleanup()`.
 */
export type Cleanup = AsyncDisposableStack;

/**
 * When a test fails and its cleanup fails too, `await using` throws a
 * SuppressedError whose `error` and `suppressed` the test reporter does not
 * print: expose both as its `cause`, so neither reason is lost.
 */
Object.defineProperty(SuppressedError.prototype, 'cause', {
  configurable: true,
  get(this: SuppressedError) {
    const both = new AggregateError([this.suppressed, this.error], 'the failure first, then the error while undoing the setup');
    both.stack = `AggregateError: ${both.message}`;
    return both;
  },
});

/** A stack undone by the enclosing suite's `after` hook, whatever part of `before` ran. */
export function suiteCleanup(): Cleanup {
  const stack = new AsyncDisposableStack();
  after(() => stack.disposeAsync());
  return stack;
}

/** A fresh temp dir, removed when `cleanup` is undone. */
export async function tempDir(cleanup: Cleanup, prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  cleanup.defer(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/**
 * When `cleanup` is undone: stops `agent`, checks the stop (e.g. its exit code)
 * and fails if an Envoy it started (logged or found in /proc) still runs.
 */
export function deferStop(cleanup: Cleanup, agent: RunningAgent, check?: (result: { exitCode?: number; signal?: string }) => void): void {
  cleanup.defer(async () => {
    const result = await agent.stop('SIGTERM');
    try {
      check?.(result);
    } finally {
      await assertGone(agent.envoyPids());
    }
  });
}
