import { networkInterfaces } from 'node:os';
import { join } from 'node:path';
import { Registry } from '../metrics/index.ts';
import { Agent } from '../agent/agent.ts';
import { defaultExpiryMarginMs, readCertNotAfter, RestartGate } from '../agent/restart-gate.ts';
import { customAdminPort } from '../bootstrap/custom-admin.ts';
import { readBootstrapOverride } from '../bootstrap/override.ts';
import { renderBootstrap } from '../bootstrap/render.ts';
import { instanceIps } from '../bootstrap/variables.ts';
import { prepareConfigDir, type ConfigDir } from '../bootstrap/write.ts';
import { localAddressIpVersion, type EnvoyLaunch } from '../envoy/args.ts';
import { EnvoyProxy } from '../envoy/envoy-proxy.ts';
import { checkEnvoyPortsFree } from '../envoy/ports.ts';
import { waitForPrivateIp } from '../role/private-ip.ts';
import { resolveRole, serviceNode } from '../role/role.ts';
import { startSds, type SdsRuntime } from '../sds/start.ts';
import type { CaSettings } from '../ca/ca-settings.ts';
import { resolveCaSettings } from '../ca/resolve.ts';
import { startCa, type CaRuntime } from '../ca/start.ts';
import { systemClock } from '../shared/clock.ts';
import { AgentError } from '../shared/errors.ts';
import { createLogger, type Logger } from '../shared/log.ts';
import type { AgentConfig } from '../settings/proxy-settings.ts';
import { agentVersion } from '../shared/version.ts';
import { EpochTracker } from '../status/epochs.ts';
import { countAgentEvents, registerAgentMetrics } from '../status/metrics.ts';
import { parseAppMetricsTargets } from '../status/app-metrics.ts';
import { parseAppProbers } from '../status/app-probes/config.ts';
import { probeNetwork } from '../status/app-probes/probe-target.ts';
import { statusEnv } from '../settings/status-env.ts';
import { startStatus, type StartStatusOptions } from '../status/status.ts';
import { startCertWatch } from '../watch/start.ts';
import { startDns, type DnsRuntime } from '../dns/start.ts';
import { readEnvSettings, type EnvValues } from '../settings/env-settings.ts';
import { dnsEnv } from '../settings/dns-env.ts';
import { loadLastKnownGoodConfig } from '../xds/last-known-good/file.ts';
import { XdsRelay } from '../xds/relay/relay.ts';
import type { CommandContext } from './context.ts';
import { checkBinary, checkXdsUpstream } from './preflight.ts';
import { xdsUpstream } from './xds-transport.ts';
import { parseLogLevels } from './log-levels.ts';
import { nodeMetadata } from './node-metadata.ts';
import type { NodeMetadata } from '../role/metadata.ts';
import { superviseProxyless } from './run-proxyless.ts';
import { proxylessEnv } from '../settings/proxyless-env.ts';
import { wasmEnv } from '../settings/wasm-env.ts';
import { startWasmLoader } from '../wasm/start.ts';
import { buildGrpcBootstrap, writeGrpcBootstrap } from '../grpcxds/bootstrap.ts';
import { processGuard } from './process-guard.ts';
import { certFilesIn } from '../shared/istio-files.ts';

export interface RunProxyOptions {
  context: CommandContext;
  logLevel: string;
  /** JSON lines even on a terminal (Istio's --log_as_json). */
  logAsJson?: boolean;
  printBootstrap: boolean;
  ignoredFlags: readonly string[];
  /** Istio flags given that the agent accepts but does not implement. */
  unimplementedFlags?: readonly string[];
  /** ProxyConfig fields that set a flag, and fields ProxyConfig does not declare. */
  proxyConfig?: { applied: readonly string[]; unknown: readonly { source: string; field: string }[] };
  /** ProxyConfig's proxyMetadata: env values under the real env (ISTIO_META_DNS_CAPTURE, …). */
  proxyMetadata?: Readonly<Record<string, string>>;
}

/** Restart after failures: --retryInitialDelay × 2^n, --retryBudget tries; refilled after a minute LIVE. */
export const retryPolicy = (config: AgentConfig) => ({ initialDelayMs: config.retryInitialDelayMs, budget: config.retryBudget, stableAfterMs: 60_000, parentInitializingDelayMs: 1000 });

/**
 * The proxy command end to end: role, bootstrap, validation, then the
 * reconcile loop until a signal or a permanent failure. Resolves the exit code.
 */
export async function runProxy(resolved: AgentConfig, options: RunProxyOptions): Promise<number> {
  let config = resolved;
  const levels = parseLogLevels(options.logLevel);
  // With --print-bootstrap stdout is the bootstrap: log lines go to stderr.
  const logger = createLogger({ level: levels.default, components: levels.components, pretty: !options.printBootstrap && !options.logAsJson && process.stdout.isTTY, fd: options.printBootstrap ? 2 : 1 });
  processGuard.useReport((level, fields, message) => logger[level](fields, message));
  for (const flag of options.ignoredFlags) logger.warn({ flag }, 'flag is obsolete and ignored');
  for (const flag of options.unimplementedFlags ?? []) logger.warn({ flag }, 'flag is accepted for Istio compatibility but not implemented; ignored');
  for (const { source, field } of options.proxyConfig?.unknown ?? []) logger.warn({ source, field }, 'ProxyConfig field is not known; ignored');
  if (options.proxyConfig?.applied.length) logger.info({ fields: options.proxyConfig.applied }, 'settings taken from ProxyConfig');
  const ca = await resolveCaSettings(config, options.context.env);
  // Every env value is checked before --configPath is made: bad input leaves nothing behind.
  const { env } = options.context;
  const warnProbe = (message: string) => logger.warn({ env: 'ISTIO_KUBE_APP_PROBERS' }, message);
  const statusSettings = readEnvSettings(env, statusEnv);
  const probeTarget = probeNetwork({ podIp: env.INSTANCE_IP || config.ip, legacyLocalhost: statusSettings.legacyLocalhostProbes, http2: statusSettings.http2Probing, keepAlive: statusSettings.probeKeepAlive });
  const app = {
    probes: parseAppProbers(env.ISTIO_KUBE_APP_PROBERS, probeTarget.destination, warnProbe), probeNetwork: probeTarget,
    metrics: parseAppMetricsTargets(env.ISTIO_PROMETHEUS_ANNOTATIONS, config.statusPort), mergeEnvoyStats: statusSettings.mergeEnvoyStats,
  };
  const configYaml = config.bootstrapOverride ? await readBootstrapOverride(config.bootstrapOverride, env.HOST_IP) : undefined;
  const proxyless = readEnvSettings(env, proxylessEnv);
  const dns = readEnvSettings({ ...options.proxyMetadata, ...env }, dnsEnv);
  const wasm = readEnvSettings(env, wasmEnv);
  const bootstrap = await prepareBootstrap(config, options.context);
  const launch: EnvoyLaunch = { localAddressIpVersion: localAddressIpVersion(instanceIps(bootstrap)), configYaml };
  if (config.customConfigFile) config = await adoptCustomAdmin(config, config.customConfigFile, bootstrap.text, logger);
  warnIfConfigDirIsOpen(config.configPath, bootstrap.configDir, options.printBootstrap ? options.context.stderr : logger);
  if (options.printBootstrap) {
    options.context.stdout.write(bootstrap.text);
    return 0;
  }
  const grpcBootstrapPath = proxyless.grpcBootstrap ?? (proxyless.disableEnvoy ? join(config.configPath, 'grpc-bootstrap.json') : undefined);
  if (proxyless.disableEnvoy) {
    await checkXdsUpstream(config);
    logger.info({ node: bootstrap.nodeId, version: agentVersion(), ...startupPorts(config), config }, 'pilot-agent starting');
    return superviseProxyless(config, { ...bootstrap, caSettings: ca, bootstrapPath: grpcBootstrapPath!, xdsSocketPath: xdsSocketPath(config), readinessSocketPath: readinessSocketPath(config) }, logger);
  }
  await checkBinary(config.binaryPath);
  await checkXdsUpstream(config);
  await checkEnvoyPortsFree(config);
  logger.info({ node: bootstrap.nodeId, version: agentVersion(), ...startupPorts(config), config }, 'pilot-agent starting');
  return superviseEnvoy(config, bootstrap, { caSettings: ca, app, launch, grpcBootstrapPath, dns: { settings: dns, namespace: env.POD_NAMESPACE ?? '' }, wasm }, logger);
}

/** Envoy's admin is where the custom bootstrap puts it; the agent watches that port. */
async function adoptCustomAdmin(config: AgentConfig, path: string, text: string, logger: Logger): Promise<AgentConfig> {
  const port = await customAdminPort({ path, text, flagPort: config.proxyAdminPort, flagGiven: config.proxyAdminPortGiven === true });
  if (port === undefined) {
    logger.warn({ customConfigFile: path, adminPort: config.proxyAdminPort }, 'custom bootstrap has no admin on a TCP port: the agent cannot see Envoy become LIVE there');
    return config;
  }
  if (port !== config.proxyAdminPort) logger.info({ customConfigFile: path, adminPort: port, defaultAdminPort: config.proxyAdminPort }, 'admin port taken from the custom bootstrap');
  return { ...config, proxyAdminPort: port };
}

/** The ports and paths an operator looks for first in the startup line. */
function startupPorts(config: AgentConfig) {
  const { proxyAdminPort: admin, statusPort: status, readinessPort: readiness, prometheusPort: prometheus } = config;
  return { ports: { admin, status, readiness, prometheus }, paths: { config: config.configPath, envoy: config.binaryPath, certs: config.certDir } };
}

async function prepareBootstrap(config: AgentConfig, context: CommandContext) {
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
  const metadata = await nodeMetadata(config, role, context.env);
  const configDir = await prepareConfigDir(config.configPath);
  const text = await renderBootstrap(config, { nodeId, metadata, xdsSocketPath: xdsSocketPath(config), readinessSocketPath: readinessSocketPath(config) });
  return { nodeId, metadata, text, configDir, domain: role.domain };
}

/** An existing --configPath keeps its mode; others entering it is worth a warning, not a chmod. */
function warnIfConfigDirIsOpen(path: string, dir: ConfigDir, to: Logger | NodeJS.WritableStream): void {
  if (dir.widerThanNeeded === undefined) return;
  const mode = dir.widerThanNeeded.toString(8).padStart(4, '0');
  const advice = 'bootstraps (0600) and the XDS socket (0600) stay private, but a 0700 directory is safer';
  if ('warn' in to) to.warn({ configPath: path, mode, advice }, 'config directory is open to other users; mode left as is');
  else to.write(`pilot-agent: warning: --configPath ${path} has mode ${mode}, open to other users; left as is (${advice})\n`);
}

interface DnsInputs {
  settings: EnvValues<typeof dnsEnv>;
  namespace: string;
}

async function superviseEnvoy(config: AgentConfig, bootstrap: { nodeId: string; metadata: NodeMetadata; text: string; domain: string }, inputs: { caSettings: CaSettings | undefined; app: StartStatusOptions['app']; launch: EnvoyLaunch; grpcBootstrapPath: string | undefined; dns: DnsInputs; wasm: EnvValues<typeof wasmEnv> }, logger: Logger): Promise<number> {
  const registry = new Registry();
  // First: a DNS_PROXY_ADDR it cannot bind is bad input, and nothing else has started yet.
  const dns = await startDnsWhenOn(config, { ...inputs.dns, domain: bootstrap.domain, node: bootstrap.nodeId, registry, logger });
  // `restart` runs only once the cert watch below starts, when gate and agent exist.
  let envoySpawned!: () => void;
  const firstSpawn = new Promise<void>((resolve) => (envoySpawned = resolve));
  const { sds, ca } = await startIdentity({ config, caSettings: inputs.caSettings, registry, logger, firstCallAfter: firstSpawn, restart: (hash) => {
    gate.certsChanged(hash);
    agent.dispatch({ type: 'config-changed', config: hash });
  } });
  // Listening before Envoy starts: Envoy's first ADS connect then succeeds at once.
  const xdsLogger = logger.child({ component: 'xds' });
  const { lastKnownGood, lastKnownGoodFile } = await loadLastKnownGoodConfig({ configPath: config.configPath, node: bootstrap.nodeId, clock: systemClock, logger: xdsLogger });
  // Once the CA has issued one, new connections to istiod present the workload certificate too (never waited for).
  const upstream = { ...xdsUpstream(config), heldCertificate: ca && (() => ca.workloadCertificate()) };
  const wasm = startWasmLoader(inputs.wasm, { clock: systemClock, logger: logger.child({ component: 'wasm' }) });
  const relay = new XdsRelay({ socketPath: xdsSocketPath(config), upstream, registry, clock: systemClock, logger: xdsLogger, lastKnownGood, nameTables: dns?.nameTables, ecds: wasm?.convert });
  await relay.start();
  // A proxyless gRPC app beside Envoy reaches istiod through the same relay.
  if (inputs.grpcBootstrapPath) await writeGrpcBootstrap(inputs.grpcBootstrapPath, buildGrpcBootstrap({ xdsSocketPath: xdsSocketPath(config), nodeId: bootstrap.nodeId, metadata: bootstrap.metadata, certDir: inputs.caSettings?.outputDir }));
  const metrics = registerAgentMetrics(registry, () => agent.state);
  const epochs = new EpochTracker({ clock: systemClock, metrics });
  const envoyProxy = new EnvoyProxy({
    config,
    serviceNode: bootstrap.nodeId,
    bootstrap: bootstrap.text,
    launch: inputs.launch,
    clock: systemClock,
    logger: logger.child({ component: 'envoy' }),
    onSpawn: () => envoySpawned(),
  });
  const proxy = epochs.wrap(envoyProxy);
  const agent = new Agent({ proxy, clock: systemClock, logger: logger.child({ component: 'agent' }), policy: retryPolicy(config) });
  const stop = (signal: NodeJS.Signals) => {
    logger.info({ signal }, 'signal received');
    if (agent.state.shuttingDown) agent.hurry();
    agent.dispatch({ type: 'shutdown' });
  };
  agent.onEvent(countAgentEvents(metrics));
  const gate = new RestartGate({
    xds: relay, clock: systemClock, registry, dispatch: (event) => agent.dispatch(event), state: () => agent.state,
    readNotAfter: () => readCertNotAfter(certFilesIn(config.certDir).chain), expiryMarginMs: defaultExpiryMarginMs,
  });
  gate.start();
  const status = await startStatus({
    port: config.statusPort, readinessSocketPath: readinessSocketPath(config), adminPort: config.proxyAdminPort, inboundOnly: config.proxyType === 'sidecar',
    agent, epochs, registry, xds: relay, sds: withCaDebug(sds, ca), certificateProblem: () => ca?.problem() ?? dns?.problem(), app: inputs.app, dns, clock: systemClock, logger: logger.child({ component: 'status' }),
  });
  // SIGTERM, SIGINT and SIGHUP drain; a fault stops Envoy at once (the drain is hurried) and waits for
  // the closes below (sockets removed, the kept config written) before the process exits 1.
  let allClosed!: () => void;
  const closed = new Promise<void>((resolve) => (allClosed = resolve));
  const unguard = [processGuard.onTerminate(stop), processGuard.whileRunning(async () => (agent.hurry(), agent.dispatch({ type: 'shutdown' }), await closed))];
  const certs = await startCertWatch(config, systemClock, logger.child({ component: 'certs' }), sds.onCertFiles);
  const exit = await agent.exited;
  gate.stop();
  for (const undo of unguard) undo();
  try {
    for (const close of [() => certs.close(), () => status?.close(), () => relay.stop(), () => wasm?.stop(), () => dns?.stop(), () => ca?.stop(), () => sds.stop(), () => lastKnownGoodFile.close()]) await close();
  } finally {
    allClosed();
  }
  // The CLI prints the reason as the one stderr line of a failed run.
  if (exit.code === 2) throw new AgentError('ENVOY_REJECTED', exit.reason ?? 'Envoy rejects its configuration');
  if (exit.code !== 0) throw new AgentError('ENVOY_FAILED', exit.reason ?? 'Envoy failed');
  return exit.code;
}

/** The DNS proxy, when on: ISTIO_META_DNS_CAPTURE for a sidecar, or ISTIO_META_ENABLE_DNS_SERVER for any proxy (Istio's rule). */
async function startDnsWhenOn(config: AgentConfig, options: DnsInputs & { domain: string; node: string; registry: Registry; logger: Logger }): Promise<DnsRuntime | undefined> {
  const { settings } = options;
  if (!(settings.capture && config.proxyType === 'sidecar') && !settings.serverOnly) return undefined;
  return startDns({
    address: settings.address, forwardTimeoutMs: settings.forwardTimeoutMs, forwardParallel: settings.forwardParallel,
    pod: { namespace: options.namespace, domain: options.domain }, configPath: config.configPath, node: options.node,
    registry: options.registry, clock: systemClock, logger: options.logger.child({ component: 'dns' }),
  });
}

/**
 * The proxy's identity: the SDS server, serving before Envoy starts as the
 * relay does, and the CA client feeding it when no certificate is mounted.
 */
async function startIdentity(options: { config: AgentConfig; caSettings: CaSettings | undefined; registry: Registry; logger: Logger; firstCallAfter?: Promise<unknown>; restart: (hash: string) => void }) {
  const { config, caSettings, registry, logger } = options;
  const sds = await startSds({ config, registry, clock: systemClock, logger: logger.child({ component: 'sds' }), workloadFromCa: caSettings !== undefined, restart: options.restart });
  const ca = caSettings && sds.store ? await startCa({ settings: caSettings, store: sds.store, registry, clock: systemClock, logger: logger.child({ component: 'ca' }), firstCallAfter: options.firstCallAfter }) : undefined;
  return { sds, ca };
}

/** /debug/sds shows the CA's side too: identity, serial, issuer, expiry, and why it fails. */
const withCaDebug = (sds: SdsRuntime, ca: CaRuntime | undefined) => ({ debug: () => (ca ? { ...(sds.debug() as object), ca: ca.debug() } : sds.debug()) });

/** Envoy reaches the discovery server through the agent's relay on this socket. */
const xdsSocketPath = (config: AgentConfig) => join(config.configPath, 'XDS');
/** Envoy's readiness listener reaches the status server on this socket, never on its TCP port. */
const readinessSocketPath = (config: AgentConfig) => join(config.configPath, 'READINESS');
