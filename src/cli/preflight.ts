import { constants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import { badFlag } from '../shared/errors.ts';
import type { AgentConfig } from '../settings/proxy-settings.ts';
import { checkFlagCombinations } from './flag-checks.ts';

/*
 * Preflight: what `proxy` checks before it starts anything, so bad input
 * ends with exit code 2 and one line instead of a half-started agent.
 */

/**
 * What can be checked of the resolved config without side effects: ports
 * that collide, a parent shutdown before the drain ends, admin on port 0.
 */
export function checkResolvedConfig(config: AgentConfig): AgentConfig {
  if (config.proxyAdminPort === 0) throw badFlag('--proxyAdminPort', 'must not be 0: the agent needs to know where admin listens');
  checkFlagCombinations(config);
  return config;
}

/** The Envoy binary must exist and be executable before anything starts. */
export async function checkBinary(path: string): Promise<void> {
  const info = await stat(path).catch(() => undefined);
  if (!info?.isFile()) throw badFlag('--binaryPath', `${path} does not exist or is not a file`);
  await access(path, constants.X_OK).catch(() => {
    throw badFlag('--binaryPath', `${path} is not executable`);
  });
}
