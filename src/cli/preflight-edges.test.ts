import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AgentError } from '../shared/errors.ts';
import type { AgentConfig } from '../settings/proxy-settings.ts';
import { checkResolvedConfig } from './preflight.ts';

const named = (message: string) => (error: unknown) => error instanceof AgentError && error.exitCode === 2 && error.message === message;

test('admin on port 0 is exit 2; a resolved config that passes comes back as it is', () => {
  const config = {
    proxyAdminPort: 15000,
    statusPort: 15020,
    readinessPort: 15021,
    prometheusPort: 15090,
    drainDurationMs: 45_000,
    parentShutdownDurationMs: 60_000,
  } as AgentConfig;
  assert.equal(checkResolvedConfig(config), config);
  assert.throws(
    () => checkResolvedConfig({ ...config, proxyAdminPort: 0 }),
    named('--proxyAdminPort: must not be 0: the agent needs to know where admin listens'),
  );
  assert.throws(
    () => checkResolvedConfig({ ...config, statusPort: 15000 }),
    named('--statusPort: 15000 is also --proxyAdminPort; each listener needs its own port'),
  );
});
