import assert from 'node:assert/strict';
import { chmod, readFile, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { tempDir } from '../../test/support/cleanup.ts';
import { pollUntil } from '../../test/support/poll.ts';
import { within } from '../../test/support/within.ts';
import { systemClock } from '../shared/clock.ts';
import { silentLogger } from '../shared/log.ts';
import type { AgentConfig } from '../settings/proxy-settings.ts';
import { EnvoyProxy } from './envoy-proxy.ts';

interface StandIn {
  /** Serve mode's exit code (it prints Envoy's config error first when not 0). */
  serveExit: number;
  /** Whether `--mode validate` accepts the bootstrap. */
  validateAccepts: boolean;
  /** Serve mode's failure is Envoy refusing its config (which validate mode may accept: a bad stats regex). */
  serveRefusesConfig?: boolean;
  /** Serve mode reports LIVE on admin (a stand-in admin in the test) and ends once the agent saw it (at most 10 s). */
  goesLive?: boolean;
  /** `--version` prints no Envoy version (`/bin/true` given as --binaryPath). */
  notEnvoy?: boolean;
}

/** A stand-in Envoy that writes down each exec's mode, and answers as `behaviour` says. */
const standIn = (record: string, behaviour: StandIn) => `#!/bin/sh
case "$1" in
  --version) ${behaviour.notEnvoy ? '' : 'echo "envoy  version: stand-in/1.40.0/Clean/RELEASE/BoringSSL";'} exit 0 ;;
  --mode)
    echo validate >> '${record}'
    ${behaviour.validateAccepts ? `echo "configuration '$4' OK"; exit 0` : `echo "[2026-11-25 00:00:00.000][1][critical][main] error initializing configuration '$4': unknown field 'lisseners'"; exit 1`} ;;
esac
echo serve >> '${record}'
${behaviour.goesLive ? `i=0; while [ ! -e '${record}.live' ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done` : ''}
${behaviour.serveExit === 0 ? '' : behaviour.serveRefusesConfig ? 'echo "[2026-11-25 00:00:00.000][1][critical][main] error \\`missing ): (unclosed\\` initializing config \'goo.gle/debugproto\'" >&2' : `echo "[2026-11-25 00:00:00.000][1][critical][main] unable to create shared memory region" >&2`}
exit ${behaviour.serveExit}
`;

/** Only what EnvoyProxy reads; the admin port has nothing behind it unless `extra` says otherwise. */
function standInConfig(dir: string, binaryPath: string, extra: Partial<AgentConfig>): AgentConfig {
  return {
    proxyType: 'router', configPath: dir, binaryPath, proxyAdminPort: 1, drainDurationMs: 1000, parentShutdownDurationMs: 1000,
    serviceCluster: 'validate', terminationDrainDurationMs: 1000, proxyLogLevel: 'warning', proxyComponentLogLevel: '', concurrency: 1,
    certDir: join(dir, 'certs'), fileFlushIntervalMs: 1000, skipDeprecatedLogs: true, ...extra,
  } as AgentConfig;
}

/** Runs epoch 0 of a stand-in Envoy to its end: what it ended with, and the modes it was exec'd in. */
async function runEpochZero(behaviour: StandIn): Promise<{ exit: { kind: string; detail: string }; execs: string[] }> {
  await using cleanup = new AsyncDisposableStack();
  const dir = await tempDir(cleanup, 'envoy-validate-');
  const record = join(dir, 'record');
  const binaryPath = join(dir, 'envoy');
  await writeFile(binaryPath, standIn(record, behaviour));
  await chmod(binaryPath, 0o755);
  const adminPort = behaviour.goesLive ? await liveAdmin(cleanup, join(dir, 'envoy-rev0.json')) : 1;
  const config = standInConfig(dir, binaryPath, { proxyAdminPort: adminPort });
  const proxy = new EnvoyProxy({ config, serviceNode: 'validate', bootstrap: '{}', clock: systemClock, logger: silentLogger });
  const stop = new AbortController();
  cleanup.defer(() => stop.abort());
  // The stand-in ends once LIVE was seen: on a busy machine a fixed half second was sometimes too short.
  const onLive = () => void writeFile(`${record}.live`, '');
  const exit = await within(proxy.run(0, '', { signal: stop.signal, onLive }), 15_000, 'epoch 0 of the stand-in Envoy to end');
  return { exit, execs: (await readFile(record, 'utf8')).trim().split('\n') };
}

/** A stand-in for Envoy's admin that says LIVE for the bootstrap at `configPath`; its port. */
async function liveAdmin(cleanup: AsyncDisposableStack, configPath: string): Promise<number> {
  const server = createServer((request, response) => {
    if (request.url === '/ready') return void response.end('LIVE\n');
    response.end(JSON.stringify({ state: 'LIVE', version: 'stand-in', command_line_options: { restart_epoch: 0, config_path: configPath } }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanup.defer(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return (server.address() as AddressInfo).port;
}

describe('epoch 0 of the built-in template is validated only when its Envoy fails to start', () => {
  it('an Envoy that starts is never validated: no second Envoy beside every pod start', async () => {
    const { exit, execs } = await runEpochZero({ serveExit: 0, validateAccepts: true, goesLive: true });
    assert.deepEqual(execs, ['serve']);
    assert.equal(exit.kind, 'normal');
  });

  it('a binary that ends at once, cleanly, and is no Envoy: rejected naming --binaryPath', async () => {
    const { exit, execs } = await runEpochZero({ serveExit: 0, validateAccepts: false, notEnvoy: true });
    assert.deepEqual(execs, ['serve', 'validate']);
    assert.equal(exit.kind, 'rejected');
    assert.match(exit.detail, /^--binaryPath: .* is not an Envoy/);
  });

  it('a start that fails on a bootstrap Envoy rejects ends as rejected, with Envoy\'s reason (the agent exits 2)', async () => {
    const { exit, execs } = await runEpochZero({ serveExit: 1, validateAccepts: false });
    // A second validation without the agent's extra flags tells a refused flag from a refused bootstrap.
    assert.deepEqual(execs, ['serve', 'validate', 'validate']);
    assert.equal(exit.kind, 'rejected');
    assert.match(exit.detail, /Envoy rejects the bootstrap: .*unknown field 'lisseners'/);
  });

  it('a start where Envoy refuses its config ends as rejected with its words, even where validate mode would pass it', async () => {
    const { exit, execs } = await runEpochZero({ serveExit: 1, validateAccepts: true, serveRefusesConfig: true });
    assert.deepEqual(execs, ['serve']);
    assert.equal(exit.kind, 'rejected');
    assert.match(exit.detail, /envoy-rev0\.json: Envoy rejects the bootstrap: missing \): \(unclosed$/);
  });

  it('a start that fails on a bootstrap Envoy accepts stays a failure, which the loop retries', async () => {
    const { exit, execs } = await runEpochZero({ serveExit: 1, validateAccepts: true });
    assert.deepEqual(execs, ['serve', 'validate']);
    assert.equal(exit.kind, 'failed');
    assert.match(exit.detail, /exit code 1/);
  });
});

/**
 * A stand-in Envoy that writes down each exec's mode and pid at its start,
 * then waits (bounded) for the test to have looked (`<record>.seen`): the
 * validating one then says Envoy's OK line, and both exit 0.
 */
const fakeEnvoy = (record: string) => `#!/bin/sh
if [ "$1" = "--mode" ]; then mode=validate; else mode=serve; fi
echo "$mode $$" >> '${record}'
i=0
while [ ! -e '${record}.seen' ] && [ $i -lt 3000 ]; do i=$((i+1)); sleep 0.01; done
[ $mode = validate ] && echo "configuration '$4' OK"
exit 0
`;

/** A process's nice value: field 19 of /proc/PID/stat (counted after its name, which may hold spaces). */
async function niceOf(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
}

it('epoch 0 of an operator\'s bootstrap: Envoy is spawned first, then its --mode validate beside it at nice 19 (off the path to ready)', async () => {
  await using cleanup = new AsyncDisposableStack();
  const dir = await tempDir(cleanup, 'envoy-validate-');
  const record = join(dir, 'record');
  const binaryPath = join(dir, 'envoy');
  await writeFile(binaryPath, fakeEnvoy(record));
  await chmod(binaryPath, 0o755);
  const config = standInConfig(dir, binaryPath, { templateFile: join(dir, 'operator-template.json') });
  const proxy = new EnvoyProxy({ config, serviceNode: 'validate', bootstrap: '{}', clock: systemClock, logger: silentLogger });
  const stop = new AbortController();
  cleanup.defer(() => stop.abort());
  cleanup.defer(() => writeFile(`${record}.seen`, ''));
  const run = within(proxy.run(0, '', { signal: stop.signal, onLive: () => undefined }), 30_000, 'epoch 0 of the stand-in Envoy to end');
  const readRecord = async () => (await readFile(record, 'utf8').catch(() => '')).trim().split('\n').map((line) => line.split(' '));
  const lines = await pollUntil(readRecord, { what: 'both execs recorded', accept: (found) => found.length === 2, intervalMs: 20 });
  const serve = Number(lines.find(([mode]) => mode === 'serve')?.[1]);
  const validate = Number(lines.find(([mode]) => mode === 'validate')?.[1]);
  // The agent lowers the validation's priority in the same turn as its spawn, and we run in the agent's
  // process: read now, it is set however late the stand-in ran (it starts at our nice value, not 0).
  const nice = await niceOf(validate);
  await writeFile(`${record}.seen`, '');
  await run;
  // Pids are handed out in fork order, wrapping at pid_max.
  const pidMax = Number(await readFile('/proc/sys/kernel/pid_max', 'utf8'));
  assert.ok((validate - serve + pidMax) % pidMax < pidMax / 2, `Envoy (pid ${serve}) spawned before its validation (pid ${validate})`);
  assert.equal(nice, 19, 'the validating Envoy runs at nice 19');
});
