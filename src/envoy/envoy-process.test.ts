import assert from 'node:assert/strict';
import { chmod, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { it } from 'node:test';
import { pino } from 'pino';
import { tempDir } from '../../test/support/cleanup.ts';
import { within } from '../../test/support/within.ts';
import { runEnvoyProcess } from './envoy-process.ts';

/** A stand-in Envoy that prints "up" once its SIGTERM handling is set, then waits (at most 30 s); `ignoreTerm`: SIGTERM does nothing. */
const standIn = (ignoreTerm: boolean) => `#!/bin/sh
trap '${ignoreTerm ? '' : 'exit 0'}' TERM
echo up >&2
i=0; while [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done
`;

/** Runs the stand-in, stops it once it says it is up, and returns how the epoch ended and what was logged at warn. */
async function stopStandIn(ignoreTerm: boolean, killAfterMs: number) {
  await using cleanup = new AsyncDisposableStack();
  const dir = await tempDir(cleanup, 'envoy-process-');
  const binaryPath = join(dir, 'envoy');
  await writeFile(binaryPath, standIn(ignoreTerm));
  await chmod(binaryPath, 0o755);
  const warnings: Record<string, unknown>[] = [];
  let up!: () => void;
  const isUp = new Promise<void>((resolve) => (up = resolve));
  const logger = pino({ level: 'info' }, {
    write: (text: string) => {
      const line = JSON.parse(text) as Record<string, unknown>;
      if (line.msg === 'up') up();
      if ((line.level as number) >= 40) warnings.push(line);
    },
  });
  const stop = new AbortController();
  cleanup.defer(() => stop.abort());
  const exit = runEnvoyProcess({
    binaryPath, args: [], signal: stop.signal, killAfterMs, logger, ports: { proxyAdminPort: 1, prometheusPort: 2, readinessPort: 3 },
    watchLive: async () => undefined, onLive: () => undefined, onSpawned: () => undefined,
  });
  await within(isUp, 10_000, 'the stand-in to trap SIGTERM');
  stop.abort();
  return { exit: await within(exit, 10_000, 'the stopped stand-in to end'), warnings };
}

it('an Envoy that ignores SIGTERM is killed after killAfterMs: the end says forced, and a warning names the pid and the delay', async () => {
  const { exit, warnings } = await stopStandIn(true, 200);
  assert.equal(exit.kind, 'aborted');
  assert.equal(exit.forced, true);
  assert.match(exit.detail, /^signal SIGKILL \(forced: SIGTERM went unanswered\)/);
  assert.equal(warnings.length, 1, JSON.stringify(warnings));
  assert.equal(warnings[0]!.msg, 'envoy did not stop on SIGTERM in time: killed with SIGKILL');
  assert.equal(warnings[0]!.killAfterMs, 200);
  assert.equal(typeof warnings[0]!.envoyPid, 'number');
});

it('an Envoy that stops on SIGTERM is no forced kill, and logs no warning', async () => {
  // The trap runs once the shell's current `sleep 0.1` ends: a loaded machine gets 10 s before SIGKILL.
  const { exit, warnings } = await stopStandIn(false, 10_000);
  assert.equal(exit.kind, 'aborted');
  assert.equal(exit.forced, undefined);
  assert.doesNotMatch(exit.detail, /forced/);
  assert.deepEqual(warnings, []);
});

it('a line that is not Envoy log, written once Envoy is LIVE, is raw output even while the check beside has not answered', async () => {
  await using cleanup = new AsyncDisposableStack();
  const dir = await tempDir(cleanup, 'envoy-process-');
  const binaryPath = join(dir, 'envoy');
  // Waits for the test to say LIVE was seen (a file), then writes an access log line to its stderr.
  const seen = join(dir, 'live-seen');
  await writeFile(binaryPath, `#!/bin/sh\ni=0; while [ ! -e '${seen}' ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done\necho 'access-log /dev/stderr /x 200' >&2\n`);
  await chmod(binaryPath, 0o755);
  const raw: string[] = [];
  let rawSeen!: () => void;
  const gotRaw = new Promise<void>((resolve) => (rawSeen = resolve));
  const logged: string[] = [];
  const logger = pino({ level: 'info' }, { write: (text: string) => void logged.push((JSON.parse(text) as { msg: string }).msg) });
  let answer!: (verdict: { accepted: true }) => void;
  const stop = new AbortController();
  cleanup.defer(() => stop.abort());
  const exit = runEnvoyProcess({
    binaryPath, args: [], signal: stop.signal, killAfterMs: 10_000, logger, ports: { proxyAdminPort: 1, prometheusPort: 2, readinessPort: 3 },
    checkBeside: () => new Promise((resolve) => (answer = resolve)), // answered only once the line came
    rawLine: (line) => (raw.push(line), rawSeen()),
    watchLive: async (_signal, onLive) => (onLive({} as never), await writeFile(seen, '')),
    onLive: () => undefined, onSpawned: () => undefined,
  });
  await within(gotRaw, 20_000, 'the line as raw output');
  assert.deepEqual(raw, ['access-log /dev/stderr /x 200']);
  assert.ok(!logged.includes('access-log /dev/stderr /x 200'), 'not in the log as well');
  answer({ accepted: true });
  await within(exit, 20_000, 'the stand-in to end');
});
