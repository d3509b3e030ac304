import assert from 'node:assert/strict';
import { test } from 'node:test';
import { listEnvoyLoggers } from '../../test/support/envoy-loggers.ts';
import { envoyBin } from '../../test/support/paths.ts';
import { envoyComponents } from './envoy-components.ts';

test('the log components the agent accepts are exactly those the Envoy binary has (regenerate with scripts/envoy-components.ts)', async () => {
  assert.deepEqual([...envoyComponents].sort(), await listEnvoyLoggers(envoyBin));
});
