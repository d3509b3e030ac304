import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { getEventListeners } from 'node:events';
import { fileURLToPath } from 'node:url';
import { afterEach, test } from 'node:test';
import { runProcess, startProcess, type StartOptions } from './start.ts';
import { ProcessError } from './result.ts';

const fixture = fileURLToPath(new URL('./fixtures/child.mjs', import.meta.url));
const started: number[] = [];
const child = (mode: string, arg = '', options: StartOptions = {}) => {
  const running = startProcess(process.execPath, [fixture, mode, arg], options);
  if (running.pid !== undefined) started.push(running.pid);
  return running;
};

// A test that fails (or times out) must not leave its child behind.
afterEach(() => {
  for (const pid of started.splice(0)) {
    try { process.kill(pid, 'SIGKILL'); } catch { /* already gone */ }
  }
});

/** Resolves once the child printed "ready": its signal handlers are in place. */
async function untilReady(stdout: NodeJS.ReadableStream | null): Promise<void> {
  let seen = '';
  for await (const chunk of stdout!) if ((seen += String(chunk)).includes('ready')) return;
  throw new Error(`the child ended before "ready": ${seen}`);
}

const reaped = (pid: number | undefined) => pid !== undefined && !existsSync(`/proc/${pid}`);

test('input goes to stdin; stdout, stderr and their interleaving come back; the exit code is kept', async () => {
  const result = await child('echo', '3', { input: 'hello' }).result;
  assert.deepEqual({ exitCode: result.exitCode, failed: result.failed, stdout: result.stdout, stderr: result.stderr }, { exitCode: 3, failed: true, stdout: 'hello', stderr: 'err' });
  assert.equal(result.all.length, 'helloerr'.length);
});

test('captured output stops at the cap, and a child writing more than the pipe holds still ends', async () => {
  const result = await child('flood', String(2 * 1024 * 1024), { maxOutputBytes: 1000 }).result;
  assert.equal(result.exitCode, 0);
  assert.deepEqual([result.stdout.length, result.stderr.length, result.all.length], [1000, 1000, 1000]);
});

test('aborting sends SIGTERM: canceled, not forced, and the child is reaped', async () => {
  const controller = new AbortController();
  const running = child('wait', '', { signal: controller.signal, output: 'pipe' });
  await untilReady(running.stdout);
  controller.abort();
  const result = await running.result;
  assert.deepEqual([result.signal, result.isCanceled, result.isForcefullyTerminated, result.failed], ['SIGTERM', true, false, true]);
  assert.ok(reaped(running.pid), 'no zombie left');
});

test('a child that ignores SIGTERM gets SIGKILL after killAfterMs', async () => {
  const controller = new AbortController();
  const running = child('ignore-term', '', { signal: controller.signal, killAfterMs: 100, output: 'pipe' });
  await untilReady(running.stdout);
  controller.abort();
  const result = await running.result;
  assert.deepEqual([result.signal, result.isCanceled, result.isForcefullyTerminated], ['SIGKILL', true, true]);
  assert.ok(reaped(running.pid), 'no zombie left');
});

test('an already aborted signal stops the child at once', async () => {
  const result = await child('wait', '', { signal: AbortSignal.abort() }).result;
  assert.deepEqual([result.signal, result.isCanceled], ['SIGTERM', true]);
});

test('timeoutMs stops the child the same way and says timedOut', async () => {
  const running = child('wait', '', { timeoutMs: 50, output: 'pipe' });
  const result = await running.result;
  assert.deepEqual([result.signal, result.timedOut, result.isCanceled], ['SIGTERM', true, false]);
});

test('a binary that cannot start gives its error code, no exit code, and one ProcessError when checked', async () => {
  const result = await startProcess('/nonexistent/binary', []).result;
  assert.deepEqual([result.code, result.exitCode, result.failed], ['ENOENT', undefined, true]);
  await assert.rejects(runProcess('/nonexistent/binary', []), (error: unknown) => error instanceof ProcessError && error.code === 'ENOENT' && error.message === '/nonexistent/binary: cannot start (ENOENT)' && (error.cause as { code?: string }).code === 'ENOENT');
});

test('runProcess rejects with the exit code and stderr, and resolves on exit 0', async () => {
  await assert.rejects(runProcess(process.execPath, [fixture, 'echo', '4'], { input: '' }), { name: 'ProcessError', exitCode: 4, stderr: 'err', message: /exit code 4$/ });
  assert.equal((await runProcess(process.execPath, [fixture, 'echo', '0'], { input: 'ok' })).stdout, 'ok');
});

test('no listener stays on the caller\'s signal once the child is gone', async () => {
  const controller = new AbortController();
  await child('echo', '0', { signal: controller.signal, input: '' }).result;
  assert.equal(getEventListeners(controller.signal, 'abort').length, 0);
});
