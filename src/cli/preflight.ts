import { badFlag } from '../shared/errors.ts';
import type { AgentConfig } from '../settings/proxy-settings.ts';
import { checkFlagCombinations } from './flag-checks.ts';

/*
 * Preflight: what `proxy` checks of its flags before it prepares anything, so
 * bad input ends with exit code 2 and one line instead of a half-started agent
 * (the files and ports the run needs: runtime/preflight.ts).
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
