import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { getPriority } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { tempDir } from '../../test/support/cleanup.ts';
import { bootstrapVerdict } from './validate.ts';

/**
 * A stand-in Envoy that writes each of its runs' arguments to `runs.log`:
 * `--version` says it is an Envoy, and `--mode validate` runs `validate`
 * (sh, with the bootstrap's path in $4 and the flags past `-l error` in $7).
 */
async function standIn(dir: string, validate: string): Promise<{ binary: string; bootstrap: string; runs: () => Promise<string[]> }> {
  const binary = join(dir, 'envoy');
  const log = join(dir, 'runs.log');
  const bootstrap = join(dir, 'bootstrap.json');
  await writeFile(bootstrap, '{}');
  await writeFile(binary, `#!/bin/sh
echo "$*" >> '${log}'
case "$1" in --version) echo "envoy  version: stand-in/1.40.0/Clean/RELEASE/BoringSSL"; exit 0 ;; esac
${validate}
`, { mode: 0o755 });
  const runs = async () => (await readFile(log, 'utf8').catch(() => '')).split('\n').filter(Boolean);
  return { binary, bootstrap, runs };
}

const validateRun = (bootstrap: string, ...flags: string[]) => ['--mode validate -c', bootstrap, '-l error', ...flags].join(' ');

test("Envoy's OK line with exit 0 is the verdict: one validate run, and --version is never asked", async () => {
  await using cleanup = new AsyncDisposableStack();
  const { binary, bootstrap, runs } = await standIn(await tempDir(cleanup, 'validate-runs-'), `echo "configuration '$4' OK"; exit 0`);
  assert.deepEqual(await bootstrapVerdict(binary, bootstrap), { accepted: true });
  assert.deepEqual(await runs(), [validateRun(bootstrap)]);
});

test("only a whole line is Envoy's OK: one with more before or after it sends the verdict on to --version", async () => {
  for (const line of [`x configuration '$4' OK`, `configuration '$4' OK, or not`]) {
    await using cleanup = new AsyncDisposableStack();
    const { binary, bootstrap, runs } = await standIn(await tempDir(cleanup, 'validate-runs-'), `echo "${line}"; exit 0`);
    assert.deepEqual(await bootstrapVerdict(binary, bootstrap), { accepted: true }, line);
    assert.deepEqual(await runs(), [validateRun(bootstrap), '--version'], line);
  }
});

test('an OK line with a non-zero exit is no acceptance: BOOTSTRAP_REJECTED', async () => {
  await using cleanup = new AsyncDisposableStack();
  const { binary, bootstrap } = await standIn(await tempDir(cleanup, 'validate-runs-'), `echo "configuration '$4' OK"; exit 1`);
  const verdict = await bootstrapVerdict(binary, bootstrap);
  assert.ok(!verdict.accepted);
  assert.equal(verdict.code, 'BOOTSTRAP_REJECTED');
});

test('exit 0 without the OK line, from a binary that says it is an Envoy: accepted', async () => {
  await using cleanup = new AsyncDisposableStack();
  const { binary, bootstrap, runs } = await standIn(await tempDir(cleanup, 'validate-runs-'), 'exit 0');
  assert.deepEqual(await bootstrapVerdict(binary, bootstrap), { accepted: true });
  assert.deepEqual(await runs(), [validateRun(bootstrap), '--version']);
});

test('a bootstrap refused with and without the flags is the bootstrap\'s fault: BOOTSTRAP_REJECTED after one run without them', async () => {
  await using cleanup = new AsyncDisposableStack();
  const { binary, bootstrap, runs } = await standIn(await tempDir(cleanup, 'validate-runs-'), 'echo "error: bad bootstrap"; exit 1');
  const verdict = await bootstrapVerdict(binary, bootstrap, { extraArgs: ['--concurrency', '2'] });
  assert.deepEqual(verdict, {
    accepted: false,
    code: 'BOOTSTRAP_REJECTED',
    reason: 'error: bad bootstrap',
    message: `${bootstrap}: Envoy rejects the bootstrap: error: bad bootstrap`,
  });
  assert.deepEqual(await runs(), [validateRun(bootstrap, '--concurrency 2'), '--version', validateRun(bootstrap)]);
});

test('a bootstrap refused without flags is validated once: no second run to blame a flag', async () => {
  await using cleanup = new AsyncDisposableStack();
  const { binary, bootstrap, runs } = await standIn(await tempDir(cleanup, 'validate-runs-'), 'echo "error: bad bootstrap"; exit 1');
  const verdict = await bootstrapVerdict(binary, bootstrap);
  assert.ok(!verdict.accepted && verdict.code === 'BOOTSTRAP_REJECTED');
  assert.deepEqual(await runs(), [validateRun(bootstrap), '--version']);
});

test('an Envoy that refuses the bootstrap without a word: BOOTSTRAP_REJECTED, and the reason says there was no output', async () => {
  await using cleanup = new AsyncDisposableStack();
  const { binary, bootstrap } = await standIn(await tempDir(cleanup, 'validate-runs-'), 'exit 1');
  const verdict = await bootstrapVerdict(binary, bootstrap);
  assert.deepEqual(verdict, { accepted: false, code: 'BOOTSTRAP_REJECTED', reason: 'no output', message: `${bootstrap}: Envoy rejects the bootstrap: no output` });
});

test('an output file gone before the agent removes it is no throw: the verdict still comes (bootstrapVerdict never rejects)', async () => {
  await using cleanup = new AsyncDisposableStack();
  const dir = await tempDir(cleanup, 'validate-runs-');
  const { binary, bootstrap } = await standIn(dir, `rm -f '${dir}'/.envoy-validate-*.out; echo "configuration '$4' OK"; exit 0`);
  assert.deepEqual(await bootstrapVerdict(binary, bootstrap), { accepted: true });
});

// The agent lowers the validating Envoy's priority just after its spawn: the stand-in waits (with a deadline) to see it.
test('the validating Envoy runs at the nice value asked', { skip: getPriority() === 19 && 'this test already runs at nice 19' }, async () => {
  await using cleanup = new AsyncDisposableStack();
  const dir = await tempDir(cleanup, 'validate-runs-');
  const nice = join(dir, 'nice');
  const { binary, bootstrap } = await standIn(dir, `i=0
while [ "$(cut -d' ' -f19 /proc/$$/stat)" != 19 ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done
cut -d' ' -f19 /proc/$$/stat > '${nice}'
echo "configuration '$4' OK"`);
  assert.deepEqual(await bootstrapVerdict(binary, bootstrap, { niceness: 19 }), { accepted: true });
  assert.equal((await readFile(nice, 'utf8')).trim(), '19');
});
