import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AgentError } from '../shared/errors.ts';
import type { AgentConfig } from '../settings/proxy-settings.ts';
import { checkFlagCombinations } from './flag-checks.ts';

const defaults = {
  proxyAdminPort: 15000,
  statusPort: 15020,
  readinessPort: 15021,
  prometheusPort: 15090,
  drainDurationMs: 45_000,
  parentShutdownDurationMs: 60_000,
};
const check = (fields: Partial<typeof defaults>) => () => checkFlagCombinations({ ...defaults, ...fields } as AgentConfig);

test('distinct ports, 0 anywhere, and a parent shutdown not before the drain (in whole seconds, rounded as Envoy is given them) pass', () => {
  const rows: Partial<typeof defaults>[] = [
    {},
    { statusPort: 0, readinessPort: 0, prometheusPort: 0 },
    { proxyAdminPort: 0, statusPort: 0 },
    { drainDurationMs: 60_000 },
    { drainDurationMs: 45_000, parentShutdownDurationMs: 45_999 },
    { drainDurationMs: 45_400, parentShutdownDurationMs: 45_000 },
  ];
  for (const fields of rows) assert.doesNotThrow(check(fields), JSON.stringify(fields));
});

test('two listeners on one port, or the parent shut down mid-drain, is exit 2 naming the flag', () => {
  const rows: [Partial<typeof defaults>, string][] = [
    [{ statusPort: 15000 }, '--statusPort: 15000 is also --proxyAdminPort; each listener needs its own port'],
    [{ readinessPort: 15020 }, '--readinessPort: 15020 is also --statusPort; each listener needs its own port'],
    [{ prometheusPort: 15021 }, '--prometheusPort: 15021 is also --readinessPort; each listener needs its own port'],
    [{ statusPort: 0, prometheusPort: 15021 }, '--prometheusPort: 15021 is also --readinessPort; each listener needs its own port'],
    [{ parentShutdownDurationMs: 44_000 }, '--parentShutdownDuration: 44s is shorter than --drainDuration (45s): Envoy would kill the parent mid-drain'],
    [
      { drainDurationMs: 46_000, parentShutdownDurationMs: 45_400 },
      '--parentShutdownDuration: 45s is shorter than --drainDuration (46s): Envoy would kill the parent mid-drain',
    ],
  ];
  for (const [fields, message] of rows) {
    assert.throws(check(fields), (error: unknown) => error instanceof AgentError && error.exitCode === 2 && error.message === message, message);
  }
});
