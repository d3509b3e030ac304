import assert from 'node:assert/strict';
import { chmod, mkdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { it } from 'node:test';
import { tempDir } from '../../test/support/cleanup.ts';
import { within } from '../../test/support/within.ts';
import { systemClock } from '../shared/clock.ts';
import type { AgentConfig } from '../settings/proxy-settings.ts';
import { recordingLogger } from '../xds/relay/fake-relay-context.ts';
import { EnvoyProxy } from './envoy-proxy.ts';

/** Past any pid_max (2^22): a signal to it finds no process. */
const leftoverPid = 99_999_999;
const stopped = "stopped an Envoy an earlier agent left running";

/** A stand-in Envoy that fails at once (its bootstrap checks out), so epoch 0 ends without an admin. */
const standIn = `#!/bin/sh
case "$1" in
  --version) echo "envoy  version: stand-in/1.40.0/Clean/RELEASE/BoringSSL"; exit 0 ;;
  --mode) echo "configuration '$4' OK"; exit 0 ;;
esac
exit 1
`;

/** A fake /proc: the agent (pid 500) and an orphaned Envoy (a zombie, so nothing waits) running `configPath`'s epoch 0 with `binaryPath`. */
async function fakeProc(dir: string, configPath: string, binaryPath: string): Promise<string> {
  const procDir = join(dir, 'proc');
  const entries: [number, string[], string][] = [
    [500, ['node', 'pilot-agent'], 'State:\tS (sleeping)\nPPid:\t1\n'],
    [leftoverPid, ['envoy', '-c', join(configPath, 'envoy-rev0.json')], 'State:\tZ (zombie)\nPPid:\t1\nUid:\t1337\t1337\t1337\t1337\n'],
  ];
  for (const [pid, argv, status] of entries) {
    await mkdir(join(procDir, String(pid), 'ns'), { recursive: true });
    await writeFile(join(procDir, String(pid), 'cmdline'), `${argv.join('\0')}\0`);
    await writeFile(join(procDir, String(pid), 'status'), status);
    await symlink('mnt:[1]', join(procDir, String(pid), 'ns', 'mnt'));
    await symlink(binaryPath, join(procDir, String(pid), 'exe'));
  }
  return procDir;
}

/** Runs epoch 0 once on `configPath`, with /proc faked; the log lines and the stand-in's path. */
async function epochZero(leftBootstrap: boolean) {
  await using cleanup = new AsyncDisposableStack();
  const dir = await tempDir(cleanup, 'envoy-leftovers-');
  const configPath = join(dir, 'config');
  await mkdir(configPath);
  if (leftBootstrap) await writeFile(join(configPath, 'envoy-rev0.json'), '{}');
  const binaryPath = join(dir, 'envoy');
  await writeFile(binaryPath, standIn);
  await chmod(binaryPath, 0o755);
  const config = {
    proxyType: 'router', configPath, binaryPath, proxyAdminPort: 1, drainDurationMs: 1000, parentShutdownDurationMs: 1000,
    serviceCluster: 'leftovers', terminationDrainDurationMs: 1000, proxyLogLevel: 'warning', proxyComponentLogLevel: '', concurrency: 1,
    certDir: join(dir, 'certs'), fileFlushIntervalMs: 1000, skipDeprecatedLogs: true,
  } as AgentConfig;
  const { logger, lines } = recordingLogger();
  const procView = { procDir: await fakeProc(dir, configPath, binaryPath), selfPid: 500, uid: 1337 };
  const proxy = new EnvoyProxy({ config, serviceNode: 'leftovers', bootstrap: '{}', clock: systemClock, logger, procView });
  const stop = new AbortController();
  cleanup.defer(() => stop.abort());
  await within(proxy.run(0, '', { signal: stop.signal, onLive: () => undefined }), 10_000, 'epoch 0 of the stand-in Envoy to end');
  return { lines, binaryPath };
}

it('a --configPath with an earlier agent\'s bootstrap left in it: epoch 0 stops that agent\'s Envoy before its own spawn', async () => {
  const { lines, binaryPath } = await epochZero(true);
  const logged = lines.filter((entry) => entry.msg === stopped).map(({ pid, exe }) => ({ pid, exe }));
  assert.deepEqual(logged, [{ pid: leftoverPid, exe: binaryPath }], 'the leftover found in /proc is stopped, and logged with what it ran');
});

it('a --configPath with no bootstrap left (a fresh pod, or a clean stop before): no /proc scan on the way to the spawn', async () => {
  const { lines } = await epochZero(false);
  assert.equal(lines.find((entry) => entry.msg === stopped), undefined, 'no Envoy can be left where no bootstrap was');
});
