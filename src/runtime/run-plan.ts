import type { AgentConfig } from '../settings/proxy-settings.ts';
import type { Logger } from '../shared/log.ts';
import { agentVersion } from '../shared/version.ts';
import { runtimeContext } from './context.ts';
import { runEnvoyRecipe } from './envoy-recipe.ts';
import { preflight } from './preflight.ts';
import type { RunPlan } from './prepare-run.ts';
import { runProxylessRecipe } from './proxyless-recipe.ts';

/** Checks the plan, then runs its recipe until a signal or a permanent failure; resolves the exit code. */
export async function runPlan(plan: RunPlan, logger: Logger): Promise<number> {
  await preflight(plan);
  const { config, recipe } = plan;
  logger.info({ node: plan.bootstrap.nodeId, version: agentVersion(), ...startupPorts(config), config }, 'pilot-agent starting');
  const ctx = runtimeContext(config, logger);
  return recipe.kind === 'envoy' ? runEnvoyRecipe(ctx, recipe.inputs) : runProxylessRecipe(ctx, recipe.inputs);
}

/** The ports and paths an operator looks for first in the startup line. */
function startupPorts(config: AgentConfig) {
  const { proxyAdminPort: admin, statusPort: status, readinessPort: readiness, prometheusPort: prometheus } = config;
  return { ports: { admin, status, readiness, prometheus }, paths: { config: config.configPath, envoy: config.binaryPath, certs: config.certDir } };
}
