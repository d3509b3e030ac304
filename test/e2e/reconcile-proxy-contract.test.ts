import { access, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EnvoyProxy } from '../../src/envoy/envoy-proxy.ts';
import { systemClock } from '../../src/shared/clock.ts';
import { silentLogger } from '../../src/shared/log.ts';
import type { AgentConfig } from '../../src/settings/proxy-settings.ts';
import { envoyBin } from '../support/paths.ts';
import { freePort } from '../support/ports.ts';
import { proxyContract } from '../support/proxy-contract.ts';

/** Admin only: Envoy is LIVE as soon as it has started, no control plane needed. */
const bootstrap = (adminPort: number) => JSON.stringify({
  node: { id: 'contract', cluster: 'contract' },
  admin: { address: { socket_address: { address: '127.0.0.1', port_value: adminPort } } },
});

proxyContract('EnvoyProxy (real Envoy)', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'proxy-contract-'));
  const adminPort = await freePort();
  // Only what EnvoyProxy reads; the rest of AgentConfig is the CLI's business.
  const config = {
    proxyType: 'router', configPath: dir, binaryPath: envoyBin, proxyAdminPort: adminPort,
    drainDurationMs: 1000, parentShutdownDurationMs: 1000, serviceCluster: 'contract',
    // Far longer than the contract waits: a drain call that waits it out fails the test.
    terminationDrainDurationMs: 60_000,
    proxyLogLevel: 'warning', proxyComponentLogLevel: '', concurrency: 1, certDir: join(dir, 'certs'),
    fileFlushIntervalMs: 1000, skipDeprecatedLogs: true,
  } as AgentConfig;
  const proxy = new EnvoyProxy({ config, serviceNode: 'contract', bootstrap: bootstrap(adminPort), clock: systemClock, logger: silentLogger });
  return {
    proxy,
    hasLeftovers: (epoch) => access(join(dir, `envoy-rev${epoch}.json`)).then(() => true, () => false),
    close: () => rm(dir, { recursive: true, force: true }),
  };
}, 20_000);
