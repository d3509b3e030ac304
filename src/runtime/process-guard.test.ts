import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { test } from 'node:test';
import { ProcessGuard, type Report } from './process-guard.ts';

function rig() {
  const target = new EventEmitter();
  const lines: { level: string; fields: Record<string, unknown>; message: string }[] = [];
  const exits: number[] = [];
  const expiries: (() => void)[] = [];
  const report: Report = (level, fields, message) => void lines.push({ level, fields, message });
  const guard = new ProcessGuard({
    target, report, exit: (code) => void exits.push(code), stopWithinMs: 15_000,
    timer: (callback) => (expiries.push(callback), { cancel: () => undefined }),
  });
  guard.install();
  return { target, guard, lines, exits, expire: () => expiries.forEach((expire) => expire()) };
}

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

test('an unhandled rejection or uncaught exception: one error line, the running proxy stopped, then exit 1', async () => {
  for (const [event, value] of [
    ['unhandledRejection', new Error('chain element is not a certificate\nsecond line')],
    ['uncaughtException', new TypeError('boom')],
  ] as const) {
    const { target, guard, lines, exits } = rig();
    let stopped = false;
    let finish!: () => void;
    guard.whileRunning(() => new Promise<void>((resolve) => (finish = () => ((stopped = true), resolve()))));
    target.emit(event, value);
    await turn();
    assert.deepEqual(exits, [], `${event}: no exit before Envoy is stopped`);
    assert.equal(guard.exitCode, 1);
    finish();
    await turn();
    assert.ok(stopped);
    assert.deepEqual(exits, [1], event);
    assert.equal(lines.length, 1, event);
    assert.equal(lines[0]!.level, 'error');
    assert.doesNotMatch(String(lines[0]!.fields.error), /\n/, 'one line');
  }
});

test('a stop that hangs does not hold the exit past the bound; a second fault is one more line, not a second exit', async () => {
  const { target, guard, lines, exits, expire } = rig();
  guard.whileRunning(() => new Promise<void>(() => undefined));
  target.emit('unhandledRejection', 'first');
  target.emit('uncaughtException', new Error('second'));
  await turn();
  assert.deepEqual(exits, []);
  expire();
  await turn();
  assert.deepEqual(exits, [1]);
  assert.equal(lines.length, 2);
});

test('SIGTERM, SIGINT and SIGHUP go to the registered drain; without one, a line and the default exit code', () => {
  const { target, guard, lines, exits } = rig();
  const drained: string[] = [];
  const undo = guard.onTerminate((signal) => drained.push(signal));
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP']) target.emit(signal, signal);
  assert.deepEqual(drained, ['SIGTERM', 'SIGINT', 'SIGHUP']);
  assert.deepEqual(exits, []);
  undo();
  target.emit('SIGHUP', 'SIGHUP');
  assert.deepEqual(exits, [129]);
  assert.equal(lines.at(-1)!.fields.signal, 'SIGHUP');
});

test('SIGUSR1 and SIGUSR2 are ignored with a line each (listened to, so Node neither dies nor opens its inspector)', () => {
  const { target, lines, exits } = rig();
  target.emit('SIGUSR1', 'SIGUSR1');
  target.emit('SIGUSR2', 'SIGUSR2');
  assert.deepEqual(exits, []);
  assert.deepEqual(lines.map((line) => line.fields.signal), ['SIGUSR1', 'SIGUSR2']);
  for (const signal of ['SIGUSR1', 'SIGUSR2', 'SIGTERM', 'SIGINT', 'SIGHUP', 'unhandledRejection', 'uncaughtException'])
    assert.equal(target.listenerCount(signal), 1, signal);
});

test('a fault whose line cannot be written (stdout gone) still stops the proxy and exits 1', async () => {
  const target = new EventEmitter();
  const exits: number[] = [];
  const guard = new ProcessGuard({
    target,
    report: () => {
      throw new Error('EPIPE');
    },
    exit: (code) => void exits.push(code),
    stopWithinMs: 15_000,
    timer: () => ({ cancel: () => undefined }),
  });
  guard.install();
  let stopped = false;
  guard.whileRunning(async () => void (stopped = true));
  target.emit('uncaughtException', new Error('write EPIPE'));
  await turn();
  assert.ok(stopped);
  assert.deepEqual(exits, [1]);
});
