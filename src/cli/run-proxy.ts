import { networkInterfaces } from 'node:os';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { Agent } from '../agent/agent.ts';
import { renderBootstrap } from '../bootstrap/render.ts';
import { prepareConfigDir, writeBootstrap } from '../bootstrap/write.ts';
import { EnvoyProxy } from '../envoy/envoy-proxy.ts';
import { validateBootstrap } from '../envoy/validate.ts';
import { envoyVersion } from '../envoy/version.ts';
import { metadataFromEnv } from '../role/metadata.ts';
import { waitForPrivateIp } from '../role/private-ip.ts';
import { resolveRole, serviceNode } from '../role/role.ts';
import { systemClock } from '../shared/clock.ts';
import { createLogger, type Logger } from '../shared/log.ts';
import type { ProxyConfig } from '../shared/proxy-config.ts';
import { agentVersion } from '../shared/version.ts';
import { EpochTracker } from '../status/epochs.ts';
import { countAgentEvents, registerAgentMetrics } from '../status/metrics.ts';
import { parseAppMetricsTarget } from '../status/app-metrics.ts';
import { parseAppProbers } from '../status/app-probes/config.ts';
import { startStatus, type StartStatusOptions } from '../status/status.ts';
import { startCertWatch } from '../watch/start.ts';
import { XdsRelay } from '../xds/relay.ts';
import type { CommandContext } from './context.ts';
import { checkBinary, checkXdsUpstream, xdsUpstream } from './proxy-config.ts';
import { parseLogLevels } from './log-levels.ts';

export interface RunProxyOptions {
  context: CommandContext;
  logLevel: string;
  printBootstrap: boolean;
  ignoredFlags: readonly string[];
}

/** Restart after failures: --retryInitialDelay × 2^n, --retryBudget tries; refilled after a minute LIVE. */
export const retryPolicy = (config: ProxyConfig) => ({ initialDelayMs: config.retryInitialDelayMs, budget: config.retryBudget, stableAfterMs: 60_000, parentInitializingDelayMs: 1000 });

/**
 * The proxy command end to end: role, bootstrap, validation, then the
 * reconcile loop until a signal or a permanent failure. Resolves the exit code.
 */
export async function runProxy(config: ProxyConfig, options: RunProxyOptions): Promise<number> {
  const levels = parseLogLevels(options.logLevel);
  const logger = createLogger({ level: levels.default, components: levels.components, pretty: !options.printBootstrap && process.stdout.isTTY });
  for (const flag of options.ignoredFlags) logger.warn({ flag }, 'flag is obsolete and ignored');
  const bootstrap = await prepareBootstrap(config, options.context);
  const { env } = options.context;
  const warnProbe = (message: string) => logger.warn({ env: 'ISTIO_KUBE_APP_PROBERS' }, message);
  const app = { probes: parseAppProbers(env.ISTIO_KUBE_APP_PROBERS, env.INSTANCE_IP ?? config.ip, warnProbe), metrics: parseAppMetricsTarget(env.ISTIO_PROMETHEUS_ANNOTATIONS) };
  if (options.printBootstrap) {
    options.context.stdout.write(bootstrap.text);
    return 0;
  }
  await checkBinary(config.binaryPath);
  await checkXdsUpstream(config);
  const [, envoy] = await Promise.all([validateBootstrap(config.binaryPath, await writeBootstrap(config.configPath, 0, bootstrap.text)), envoyVersion(config.binaryPath)]);
  logger.info({ node: bootstrap.nodeId, version: agentVersion(), envoyVersion: envoy, ...startupPorts(config), config }, 'pilot-agent starting');
  return superviseEnvoy(config, bootstrap, app, logger);
}

/** The ports and paths an operator looks for first in the startup line. */
function startupPorts(config: ProxyConfig) {
  const { proxyAdminPort: admin, statusPort: status, readinessPort: readiness, prometheusPort: prometheus } = config;
  return { ports: { admin, status, readiness, prometheus }, paths: { config: config.configPath, envoy: config.binaryPath, certs: config.certDir } };
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
  const text = await renderBootstrap(config, { nodeId, metadata, xdsSocketPath: xdsSocketPath(config) });
  return { nodeId, text };
}

async function superviseEnvoy(config: ProxyConfig, bootstrap: { nodeId: string; text: string }, app: StartStatusOptions['app'], logger: Logger): Promise<number> {
  const registry = new Registry();
  // Listening before Envoy starts: Envoy's first ADS connect then succeeds at once.
  const relay = new XdsRelay({ socketPath: xdsSocketPath(config), upstream: xdsUpstream(config), registry, clock: systemClock, logger: logger.child({ component: 'xds' }) });
  await relay.start();
  const metrics = registerAgentMetrics(registry, () => agent.state);
  const epochs = new EpochTracker({ clock: systemClock, metrics });
  const envoyProxy = new EnvoyProxy({
    config,
    serviceNode: bootstrap.nodeId,
    bootstrap: bootstrap.text,
    clock: systemClock,
    logger: logger.child({ component: 'envoy' }),
  });
  const proxy = epochs.wrap(envoyProxy);
  const agent = new Agent({ proxy, clock: systemClock, logger: logger.child({ component: 'agent' }), policy: retryPolicy(config) });
  const stop = (signal: NodeJS.Signals) => {
    logger.info({ signal }, 'signal received');
    if (agent.state.shuttingDown) agent.hurry();
    agent.dispatch({ type: 'shutdown' });
  };
  agent.onEvent(countAgentEvents(metrics));
  const status = await startStatus({
    port: config.statusPort, adminPort: config.proxyAdminPort, inboundOnly: config.proxyType === 'sidecar',
    agent, epochs, registry, xds: relay, app, clock: systemClock, logger: logger.child({ component: 'status' }),
  });
  process.on('SIGTERM', stop).on('SIGINT', stop);
  const certs = await startCertWatch(config, systemClock, logger.child({ component: 'certs' }), (hash) => agent.dispatch({ type: 'config-changed', config: hash }));
  const code = await agent.exited;
  await certs.close();
  process.off('SIGTERM', stop).off('SIGINT', stop);
  await status?.close();
  await relay.stop();
  return code;
}

/** Envoy reaches the discovery server through the agent's relay on this socket. */
const xdsSocketPath = (config: ProxyConfig) => join(config.configPath, 'XDS');
