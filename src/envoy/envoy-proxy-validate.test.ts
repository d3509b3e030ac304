import assert from 'node:assert/strict';
import { chmod, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { it } from 'node:test';
import { tempDir } from '../../test/support/cleanup.ts';
import { within } from '../../test/support/within.ts';
import { systemClock } from '../shared/clock.ts';
import { silentLogger } from '../shared/log.ts';
import type { AgentConfig } from '../settings/proxy-settings.ts';
import { EnvoyProxy } from './envoy-proxy.ts';

/**
 * A stand-in Envoy that writes down what each exec saw. `--mode validate`:
 * its pid and its nice value, read until it is not 0 (at most ~2 s, the
 * agent lowers it just after the spawn), then Envoy's OK line. Serve mode:
 * its pid, then it waits (bounded) for the validate line and exits 0.
 */
const fakeEnvoy = (record: string) => `#!/bin/sh
if [ "$1" = "--mode" ]; then
  n=0; i=0
  while [ "$n" = 0 ] && [ $i -lt 200 ]; do n=$(cut -d' ' -f19 /proc/$$/stat); i=$((i+1)); sleep 0.01; done
  echo "validate $$ $n" >> '${record}'
  echo "configuration '$4' OK"
  exit 0
fi
echo "serve $$" >> '${record}'
i=0
while ! grep -q validate '${record}' && [ $i -lt 300 ]; do i=$((i+1)); sleep 0.01; done
exit 0
`;

it('epoch 0: Envoy is spawned first, then its --mode validate beside it at nice 19 (off the path to ready)', async () => {
  await using cleanup = new AsyncDisposableStack();
  const dir = await tempDir(cleanup, 'envoy-validate-');
  const record = join(dir, 'record');
  const binaryPath = join(dir, 'envoy');
  await writeFile(binaryPath, fakeEnvoy(record));
  await chmod(binaryPath, 0o755);
  // Only what EnvoyProxy reads; the admin port has nothing behind it (LIVE never comes).
  const config = {
    proxyType: 'router', configPath: dir, binaryPath, proxyAdminPort: 1, drainDurationMs: 1000, parentShutdownDurationMs: 1000,
    serviceCluster: 'validate', terminationDrainDurationMs: 1000, proxyLogLevel: 'warning', proxyComponentLogLevel: '', concurrency: 1,
    certDir: join(dir, 'certs'), fileFlushIntervalMs: 1000, skipDeprecatedLogs: true,
  } as AgentConfig;
  const proxy = new EnvoyProxy({ config, serviceNode: 'validate', bootstrap: '{}', clock: systemClock, logger: silentLogger });
  const stop = new AbortController();
  cleanup.defer(() => stop.abort());
  await within(proxy.run(0, '', { signal: stop.signal, onLive: () => undefined }), 10_000, 'epoch 0 of the stand-in Envoy to end');
  const lines = (await readFile(record, 'utf8')).trim().split('\n').map((line) => line.split(' '));
  const serve = lines.find(([mode]) => mode === 'serve');
  const validate = lines.find(([mode]) => mode === 'validate');
  assert.ok(serve && validate, `both execs recorded: ${JSON.stringify(lines)}`);
  // Pids grow with each fork: the smaller one was spawned first.
  assert.ok(Number(serve[1]) < Number(validate[1]), `Envoy (pid ${serve[1]}) spawned before its validation (pid ${validate[1]})`);
  assert.equal(validate[2], '19', 'the validating Envoy runs at nice 19');
});
