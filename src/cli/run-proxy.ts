import { networkInterfaces } from 'node:os';
import { Agent } from '../agent/agent.ts';
import { renderBootstrap } from '../bootstrap/render.ts';
import { prepareConfigDir, writeBootstrap } from '../bootstrap/write.ts';
import { EnvoyProxy } from '../envoy/envoy-proxy.ts';
import { validateBootstrap } from '../envoy/validate.ts';
import { metadataFromEnv } from '../role/metadata.ts';
import { waitForPrivateIp } from '../role/private-ip.ts';
import { resolveRole, serviceNode } from '../role/role.ts';
import { systemClock } from '../shared/clock.ts';
import { createLogger, type Logger } from '../shared/log.ts';
import type { ProxyConfig } from '../shared/proxy-config.ts';
import { agentVersion } from '../shared/version.ts';
import { hashFiles, watchedCertFiles } from '../watch/cert-files.ts';
import type { CommandContext } from './context.ts';
import { checkBinary } from './proxy-config.ts';
import { parseLogLevels } from './log-levels.ts';

export interface RunProxyOptions {
  context: CommandContext;
  logLevel: string;
  printBootstrap: boolean;
  ignoredFlags: readonly string[];
}

export const defaultRetryPolicy = { initialDelayMs: 200, budget: 10, stableAfterMs: 60_000 };

/**
 * The proxy command end to end: role, bootstrap, validation, then the
 * reconcile loop until a signal or a permanent failure. Resolves the exit code.
 */
export async function runProxy(config: ProxyConfig, options: RunProxyOptions): Promise<number> {
  const levels = parseLogLevels(options.logLevel);
  const logger = createLogger({ level: levels.default, pretty: !options.printBootstrap && process.stdout.isTTY });
  for (const flag of options.ignoredFlags) logger.warn({ flag }, 'flag is obsolete and ignored');
  const bootstrap = await prepareBootstrap(config, options.context);
  if (options.printBootstrap) {
    options.context.stdout.write(bootstrap.text);
    return 0;
  }
  await checkBinary(config.binaryPath);
  await validateBootstrap(config.binaryPath, await writeBootstrap(config.configPath, 0, bootstrap.text));
  logger.info({ node: bootstrap.nodeId, version: agentVersion(), config }, 'pilot-agent starting');
  return superviseEnvoy(config, bootstrap, logger);
}

async function prepareBootstrap(config: ProxyConfig, context: CommandContext) {
  const role = await resolveRole({
    type: config.proxyType,
    registry: config.registry,
    ip: config.ip,
    id: config.id,
    domain: config.domain,
    env: context.env,
    findPrivateIp: () => waitForPrivateIp({ interfaces: networkInterfaces, clock: systemClock, timeoutMs: 120_000, intervalMs: 100 }),
  });
  const nodeId = serviceNode(role);
  const metadata = metadataFromEnv(context.env);
  await prepareConfigDir(config.configPath);
  const text = await renderBootstrap(config, { nodeId, metadata, xdsTarget: { kind: 'tcp', address: config.discoveryAddress } });
  return { nodeId, text };
}

async function superviseEnvoy(config: ProxyConfig, bootstrap: { nodeId: string; text: string }, logger: Logger): Promise<number> {
  const proxy = new EnvoyProxy({
    config,
    serviceNode: bootstrap.nodeId,
    bootstrap: bootstrap.text,
    clock: systemClock,
    logger: logger.child({ component: 'envoy' }),
  });
  const agent = new Agent({ proxy, clock: systemClock, logger: logger.child({ component: 'agent' }), policy: defaultRetryPolicy });
  const stop = (signal: NodeJS.Signals) => {
    logger.info({ signal }, 'signal received');
    if (agent.state.shuttingDown) agent.hurry();
    agent.dispatch({ type: 'shutdown' });
  };
  process.on('SIGTERM', stop).on('SIGINT', stop);
  agent.dispatch({ type: 'config-changed', config: await hashFiles(watchedCertFiles(config.certDir, config.proxyType)) });
  const code = await agent.exited;
  process.off('SIGTERM', stop).off('SIGINT', stop);
  return code;
}
