import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readSourceFiles } from '../../test/support/source-files.ts';

/**
 * Every timer of the product goes through src/shared/clock.ts, which bounds
 * it: Node runs a delay past 2^31-1 ms after 1 ms, so one unbounded timer
 * fed a long delay (a year-long certificate) spins. Files here may arm
 * Node's timers directly, each with why it is safe.
 */
const allowed: Record<string, string> = {
  'src/shared/clock.ts': 'the one place that arms Node timers, in bounded chunks',
  'src/dns/server.ts': 'socket.setTimeout with the constant TCP idle limit: an idle timer, never near 2^31 ms',
  'src/ca/ca-client.ts': 'AbortSignal.timeout of a constant 10 s call timeout (src/ca is reworked elsewhere; move it to timeoutSignal there)',
};

/** Ways to arm a Node timer without the clock; `clock.setTimeout(` and `setImmediate` are fine. */
const patterns: [RegExp, string][] = [
  [/(?<![\w.#$])(setTimeout|setInterval)\s*\(/, 'global setTimeout/setInterval'],
  [/globalThis\.(setTimeout|setInterval)\b/, 'globalThis timer'],
  [/(?<![Cc]lock)\.(setTimeout|setInterval)\s*\(/, 'a socket/server/session timer'],
  [/AbortSignal\.timeout\s*\(/, 'AbortSignal.timeout'],
  [/from\s+['"](node:)?timers(\/promises)?['"]/, 'node:timers import'],
];
/** node:timers for setImmediate only (one turn of the loop, no delay). */
const harmless = /import\s*\{\s*setImmediate(\s+as\s+\w+)?\s*\}\s*from\s+['"]node:timers\/promises['"]/;

test('no timer in src/ bypasses the bounded clock (src/shared/clock.ts)', () => {
  const found: string[] = [];
  for (const { path: name, text } of readSourceFiles()) {
    if (name in allowed) continue;
    text.split('\n').forEach((line, index) => {
      if (harmless.test(line) || /^\s*(\/\/|\*|\/\*)/.test(line)) return;
      for (const [pattern, what] of patterns) if (pattern.test(line)) found.push(`${name}:${index + 1}: ${what}: ${line.trim()}`);
    });
  }
  assert.deepEqual(found, [], 'use boundedTimer/boundedInterval/timeoutSignal or a Clock from src/shared/clock.ts');
});

test('the scan finds each way of arming a timer (it would not pass by matching nothing)', () => {
  const lines = [
    'const t = setTimeout(f, 5);',
    'setInterval(f, 5)',
    'globalThis.setTimeout(f)',
    'socket.setTimeout(5000)',
    'fetch(u, { signal: AbortSignal.timeout(5) })',
    "import { setTimeout } from 'node:timers/promises';",
  ];
  for (const line of lines) assert.ok(patterns.some(([pattern]) => pattern.test(line)), line);
  for (const line of ['this.#options.clock.setTimeout(f, 5)', 'clock.setTimeout(f, 5)', "import { setImmediate as nextTurn } from 'node:timers/promises';"]) {
    assert.ok(harmless.test(line) || !patterns.some(([pattern]) => pattern.test(line)), line);
  }
});
