import assert from 'node:assert/strict';
import { chmod, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { it } from 'node:test';
import { tempDir } from '../../test/support/cleanup.ts';
import { within } from '../../test/support/within.ts';
import { bootstrapPath } from '../bootstrap/write.ts';
import { systemClock } from '../shared/clock.ts';
import { silentLogger } from '../shared/log.ts';
import type { AgentConfig } from '../settings/proxy-settings.ts';
import { EnvoyProxy } from './envoy-proxy.ts';

/** A stand-in Envoy: validate says OK, serve mode waits (at most 30 s) to be stopped. */
const fakeEnvoy = `#!/bin/sh
if [ "$1" = "--mode" ]; then echo "configuration '$4' OK"; exit 0; fi
exec sleep 30
`;

it('LIVE is polled on admin /ready; /server_info (~120 KB from a real Envoy) is asked only once /ready says LIVE, to check the epoch', async () => {
  await using cleanup = new AsyncDisposableStack();
  const dir = await tempDir(cleanup, 'envoy-live-');
  const binaryPath = join(dir, 'envoy');
  await writeFile(binaryPath, fakeEnvoy);
  await chmod(binaryPath, 0o755);
  // The admin the stand-in would have: not LIVE for its first three /ready polls.
  const asked: string[] = [];
  const admin = createServer((request, response) => {
    asked.push(request.url ?? '');
    if (request.url === '/ready') {
      const live = asked.filter((path) => path === '/ready').length > 3;
      response.writeHead(live ? 200 : 503).end(live ? 'LIVE\n' : 'PRE_INITIALIZING\n');
    } else if (request.url === '/server_info') {
      response.end(JSON.stringify({ state: 'LIVE', version: 'fake/1.40.0', command_line_options: { restart_epoch: 0, config_path: bootstrapPath(dir, 0) } }));
    } else response.writeHead(404).end();
  });
  await new Promise<void>((resolve) => admin.listen(0, '127.0.0.1', resolve));
  cleanup.defer(() => new Promise<void>((resolve) => (admin.closeAllConnections(), admin.close(() => resolve()))));
  const config = {
    proxyType: 'router',
    configPath: dir,
    binaryPath,
    proxyAdminPort: (admin.address() as AddressInfo).port,
    drainDurationMs: 1000,
    parentShutdownDurationMs: 1000,
    serviceCluster: 'live',
    terminationDrainDurationMs: 1000,
    proxyLogLevel: 'warning',
    proxyComponentLogLevel: '',
    concurrency: 1,
    certDir: join(dir, 'certs'),
    fileFlushIntervalMs: 1000,
    skipDeprecatedLogs: true,
  } as AgentConfig;
  const proxy = new EnvoyProxy({ config, serviceNode: 'live', bootstrap: '{}', clock: systemClock, logger: silentLogger });
  const stop = new AbortController();
  cleanup.defer(() => stop.abort());
  let reportLive!: (version: string | undefined) => void;
  const live = new Promise<string | undefined>((resolve) => (reportLive = resolve));
  const exit = proxy.run(0, '', { signal: stop.signal, onLive: (details) => reportLive(details?.envoyVersion) });
  assert.equal(await within(live, 10_000, 'LIVE from the stand-in\'s admin'), 'fake/1.40.0');
  stop.abort();
  await within(exit, 10_000, 'the stopped epoch to end');
  assert.deepEqual(asked, ['/ready', '/ready', '/ready', '/ready', '/server_info'], 'four /ready polls, then one /server_info');
});
