import { it as nodeIt, test as nodeTest } from 'node:test';
import { createContext, Script } from 'node:vm';

/**
 * Synchronous test bodies with a deadline. A parser loop that stops moving
 * (a bug, or a mutant in a mutation run) spins synchronously: the event
 * loop never turns, so neither --test-timeout nor a timer can stop it, and
 * the whole run stalls instead of failing a test. node:vm's `timeout` can:
 * its watchdog interrupts whatever runs under the script, our functions
 * included, so the test fails by name with what spun.
 *
 * For tests whose body is synchronous (the parsers' table tests). The
 * bodies take microseconds to tens of milliseconds. Under Stryker
 * (scripts/mutation.sh sets MUTATION_ROOM) the deadline is 1 s, shorter
 * than the time Stryker grants a mutant (its timeoutMS, 3 s), so a spinning
 * mutant is killed by this test. Elsewhere it is 10 s: the deadline is wall
 * time, and a suite run beside CPU hogs (load 30 on 2 cores) took over 1 s
 * for NdsSplitter's byte-at-a-time table.
 */
export const syncDeadlineMs = process.env.MUTATION_ROOM === undefined ? 10_000 : 1000;

const context = createContext({ body: undefined as (() => unknown) | undefined });
const call = new Script('body()');
/**
 * The first body that spun in this process. A loop that stops advancing
 * usually spins every later test of the file too; each would wait out the
 * full deadline, and together they outlast the time a mutation run grants a
 * mutant. So later bodies fail at once, naming the first.
 */
let spun: string | undefined;

/** Runs `body` and returns what it returns; throws naming `what` when it is still running after `ms`. */
export function withinSync<T>(what: string, body: () => T, ms = syncDeadlineMs): T {
  if (spun !== undefined) throw new Error(`${what} not run: ${spun} spun past its deadline earlier in this process`);
  context.body = body;
  try {
    const result = call.runInContext(context, { timeout: ms }) as T;
    // The deadline covers only what runs before the first await.
    if (typeof (result as PromiseLike<unknown> | undefined)?.then === 'function')
      throw new Error(`${what}: withinSync is for synchronous bodies; an async one needs within()`);
    return result;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ERR_SCRIPT_EXECUTION_TIMEOUT') {
      spun = what;
      throw new Error(`${what} still running after ${ms} ms: a synchronous loop that does not end`, { cause: error });
    }
    throw error;
  } finally {
    context.body = undefined;
  }
}

type SyncBody = () => void;

/** node:test's `test`, the body under withinSync. */
export const test = (name: string, body: SyncBody) => nodeTest(name, () => withinSync(`test "${name}"`, body));
/** node:test's `it`, the body under withinSync. */
export const it = (name: string, body: SyncBody) => nodeIt(name, () => withinSync(`test "${name}"`, body));
