import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { ProcessGuard, stderrReport, type Report } from './process-guard.ts';

type Line = { level: string; fields: Record<string, unknown>; message: string };
const events = ['unhandledRejection', 'uncaughtException', 'SIGTERM', 'SIGINT', 'SIGHUP', 'SIGUSR1', 'SIGUSR2'];
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

function rig() {
  const target = new EventEmitter();
  const lines: Line[] = [];
  const exits: number[] = [];
  const timers = { started: 0, cancelled: 0, bound: 0 };
  const report: Report = (level, fields, message) => void lines.push({ level, fields, message });
  const timer = (_callback: () => void, ms: number) => ((timers.started += 1), (timers.bound = ms), { cancel: () => void (timers.cancelled += 1) });
  const guard = new ProcessGuard({ target, report, exit: (code) => void exits.push(code), stopWithinMs: 15_000, timer });
  return { target, guard, lines, exits, timers };
}

test('a fault line names the fault and its error on one line of at most 1000 characters; a second fault says it is ignored', async () => {
  const { target, guard, lines, exits, timers } = rig();
  guard.install();
  assert.equal(guard.exitCode, undefined, 'no fault, no exit code of its own');
  guard.whileRunning(async () => undefined);
  target.emit('unhandledRejection', 'chain  \n   refused');
  target.emit('uncaughtException', new Error(`${'x'.repeat(1500)}`));
  await turn();
  assert.deepEqual(lines, [
    { level: 'error', fields: { fault: 'unhandled promise rejection', error: 'chain refused' }, message: 'unhandled promise rejection: stopping Envoy and exiting 1' },
    { level: 'error', fields: { fault: 'uncaught exception', error: 'x'.repeat(1000) }, message: 'another fault while stopping; ignored' },
  ]);
  assert.deepEqual(exits, [1]);
  assert.deepEqual(timers, { started: 1, cancelled: 1, bound: 15_000 }, 'the bound is cancelled once the stops settled: no timer left behind');
});

test('install twice listens once; uninstall (also twice) leaves no listener behind', () => {
  const { target, guard } = rig();
  guard.install();
  guard.install();
  for (const event of events) assert.equal(target.listenerCount(event), 1, event);
  guard.uninstall();
  guard.uninstall();
  for (const event of events) assert.equal(target.listenerCount(event), 0, event);
  guard.install();
  assert.equal(target.listenerCount('SIGTERM'), 1, 'installed again after an uninstall');
});

test("useReport moves lines to the proxy's logger until its undo; the ignored signal's line is a warning naming it", () => {
  const { target, guard, lines } = rig();
  guard.install();
  const proxyLines: Line[] = [];
  const undo = guard.useReport((level, fields, message) => void proxyLines.push({ level, fields, message }));
  target.emit('SIGUSR1', 'SIGUSR1');
  undo();
  target.emit('SIGUSR2', 'SIGUSR2');
  const message = 'signal ignored: it has no meaning to the agent (the inspector stays closed)';
  assert.deepEqual(proxyLines, [{ level: 'warn', fields: { signal: 'SIGUSR1' }, message }]);
  assert.deepEqual(lines, [{ level: 'warn', fields: { signal: 'SIGUSR2' }, message }]);
});

test('undoing the latest drain hands SIGTERM back to the one before; with none left, an info line and exit 143', () => {
  const { target, guard, lines, exits } = rig();
  guard.install();
  const drained: string[] = [];
  guard.onTerminate(() => drained.push('first'));
  const undo = guard.onTerminate(() => drained.push('second'));
  undo();
  undo();
  target.emit('SIGTERM', 'SIGTERM');
  assert.deepEqual(drained, ['first'], 'a second undo removes nothing more');
  const bare = rig();
  bare.guard.install();
  bare.target.emit('SIGTERM', 'SIGTERM');
  assert.deepEqual(bare.lines, [{ level: 'info', fields: { signal: 'SIGTERM' }, message: 'signal received; exiting' }]);
  assert.deepEqual(bare.exits, [143]);
  assert.deepEqual([lines, exits], [[], []]);
});

test('a stop undone (its Envoy gone) is not run by a later fault; the one still registered is', async () => {
  const { target, guard, exits } = rig();
  guard.install();
  const stopped: string[] = [];
  const undo = guard.whileRunning(async () => void stopped.push('old epoch'));
  guard.whileRunning(async () => void stopped.push('current'));
  undo();
  target.emit('uncaughtException', new Error('boom'));
  await turn();
  assert.deepEqual(stopped, ['current']);
  assert.deepEqual(exits, [1]);
});

test('before the proxy logger: one stderr line, the message then its fields as key=value with whitespace folded', () => {
  const written: string[] = [];
  const write = process.stderr.write;
  process.stderr.write = ((text: string) => (written.push(text), true)) as typeof process.stderr.write;
  try {
    stderrReport('error', { fault: 'uncaught exception', error: 'a\n  b\tc' }, 'uncaught exception: stopping Envoy and exiting 1');
    stderrReport('info', {}, 'signal received; exiting');
  } finally {
    process.stderr.write = write;
  }
  assert.deepEqual(written, [
    'pilot-agent: uncaught exception: stopping Envoy and exiting 1 (fault=uncaught exception error=a b c)\n',
    'pilot-agent: signal received; exiting\n',
  ]);
});

test("the process's own guard: installed in a real process, a fault is one line on stderr and exit 1", async () => {
  // A child Node, so the guard's target is a real process and its exit a real exit (and Stryker's active mutant follows in its env).
  const script = [
    `const { processGuard } = await import(${JSON.stringify(new URL('./process-guard.ts', import.meta.url).href)});`,
    'processGuard.install();',
    "setImmediate(() => { throw new Error('boom'); });",
    // A guard that never exits would hold the child for its 15 s stop deadline: exit 7 first (unref'd, so it holds nothing itself).
    'setTimeout(() => process.exit(7), 5000).unref();',
  ].join('\n');
  // timeout(1) outlives this test: a mutant that spins the child is killed even when Stryker kills this process first.
  const run = promisify(execFile)('timeout', ['-s', 'KILL', '10', process.execPath, '--input-type=module', '-e', script]);
  const failed = await run.then(() => undefined, (error: { code?: number; stderr?: string }) => error);
  assert.equal(failed?.code, 1, 'exit 1 after the fault');
  assert.equal(failed.stderr, 'pilot-agent: uncaught exception: stopping Envoy and exiting 1 (fault=uncaught exception error=boom)\n');
});
