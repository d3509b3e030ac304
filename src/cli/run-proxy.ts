import { networkInterfaces } from 'node:os';
import { join } from 'node:path';
import { customAdmin } from '../bootstrap/custom-admin.ts';
import { readBootstrapOverride } from '../bootstrap/override.ts';
import { renderBootstrap } from '../bootstrap/render.ts';
import { instanceIps } from '../bootstrap/variables.ts';
import { listenerHosts } from '../bootstrap/listener-hosts.ts';
import { metadataDiscoveryAsked } from '../bootstrap/metadata-discovery.ts';
import { prepareConfigDir, type ConfigDir } from '../bootstrap/write.ts';
import { localAddressIpVersion, type EnvoyLaunch } from '../envoy/args.ts';
import { checkEnvoyPortsFree } from '../envoy/ports.ts';
import { envoyLocality, localityFromLabels } from '../role/locality.ts';
import { localityBesideLabels } from '../role/platform-locality.ts';
import { waitForPrivateIp } from '../role/private-ip.ts';
import { resolveRole, serviceNode } from '../role/role.ts';
import { serviceCluster } from '../role/service-cluster.ts';
import { resolveCaSettings } from '../ca/resolve.ts';
import { systemClock } from '../shared/clock.ts';
import { createLogger, type Logger } from '../shared/log.ts';
import type { AgentConfig } from '../settings/proxy-settings.ts';
import { agentVersion } from '../shared/version.ts';
import { parseAppMetricsTargets } from '../status/app-metrics.ts';
import { parseAppProbers } from '../status/app-probes/config.ts';
import { probeNetwork, type ProbeNetwork } from '../status/app-probes/probe-target.ts';
import { parseHealthProbe } from '../health/probe-config.ts';
import type { AgentEnv } from '../settings/agent-inputs.ts';
import type { CommandContext } from './context.ts';
import { checkBinary } from './preflight.ts';
import { checkXdsUpstream, xdsUpstream } from '../runtime/xds-upstream.ts';
import { parseLogLevels } from './log-levels.ts';
import { nodeMetadata } from './node-metadata.ts';
import { runProxylessRecipe } from '../runtime/proxyless-recipe.ts';
import { processGuard } from './process-guard.ts';
import { runtimeContext } from '../runtime/context.ts';
import { runEnvoyRecipe } from '../runtime/envoy-recipe.ts';

export interface RunProxyOptions {
  context: CommandContext;
  logLevel: string;
  /** JSON lines even on a terminal (Istio's --log_as_json). */
  logAsJson?: boolean;
  printBootstrap: boolean;
  ignoredFlags: readonly string[];
  /** Istio flags given that the agent accepts but does not implement. */
  unimplementedFlags?: readonly string[];
  /** Arguments commander did not recognise (Istio's agent ignores unknown flags); each is one warning. */
  unknownArgs?: readonly string[];
  /** ProxyConfig fields that set a flag, and fields ProxyConfig does not declare. */
  proxyConfig?: { applied: readonly string[]; unknown: readonly { source: string; field: string }[]; origin?: Readonly<Record<string, string>> };
  /** The typed env (readAgentInputs). */
  env: AgentEnv;
  /** The merged ProxyConfig (mesh file, PROXY_CONFIG, annotation): the node's PROXY_CONFIG below what the agent runs with. */
  mergedProxyConfig?: Record<string, unknown>;
  /** Which of those set proxyMetadata, for error lines. */
  proxyMetadataSource?: string;
}

/**
 * The proxy command end to end: role, bootstrap, validation, then the
 * reconcile loop until a signal or a permanent failure. Resolves the exit code.
 */
export async function runProxy(resolved: AgentConfig, options: RunProxyOptions): Promise<number> {
  const logger = proxyLogger(options);
  processGuard.useReport((level, fields, message) => logger[level](fields, message));
  noteIgnoredInputs(resolved, options, logger);
  const ca = await resolveCaSettings(resolved, options.context.env);
  // Every env value was checked (readAgentInputs) before --configPath is made: bad input leaves nothing behind.
  const { env } = options;
  const app = appSettings(resolved, env, logger);
  const health = healthSettings(options, app.probeNetwork, logger);
  const configYaml = resolved.bootstrapOverride ? await readBootstrapOverride(resolved.bootstrapOverride, env.hostIp) : undefined;
  const bootstrap = await prepareBootstrap(resolved, options);
  if (bootstrap.platform?.problem) logger.warn({ env: 'CLOUD_PLATFORM', problem: bootstrap.platform.problem }, 'no locality from the platform');
  if (!resolved.deltaXds && metadataDiscoveryAsked(resolved, bootstrap.metadata))
    logger.warn({ metadata: 'METADATA_DISCOVERY' }, 'metadata discovery is not rendered: it needs Delta xDS (as Istio disables it on State of the World)');
  // Admin on the pod's loopback (::1 when IPv6-only); an operator's bootstrap says where its admin is (adoptCustomAdmin).
  let config: AgentConfig = { ...resolved, serviceCluster: bootstrap.serviceCluster, proxyAdminHost: bootstrap.listenerHosts.localhost };
  const launch: EnvoyLaunch = {
    localAddressIpVersion: localAddressIpVersion(instanceIps(bootstrap)), configYaml, enableCoreDump: env.bootstrap.enableCoreDump,
    fileFlushMinSizeKb: resolved.bootstrapFields?.fileFlushMinSizeKb,
  };
  if (config.customConfigFile) config = await adoptCustomAdmin(config, config.customConfigFile, bootstrap.text, logger);
  warnIfConfigDirIsForeign(config.configPath, bootstrap.configDir, options.printBootstrap ? options.context.stderr : logger);
  if (options.printBootstrap) {
    options.context.stdout.write(bootstrap.text);
    return 0;
  }
  const run: ProxyRun = { config, logger, bootstrap, ca, env, upstream: xdsUpstream(config, env.xdsMetadata, env.provCert) };
  return env.proxyless.disableEnvoy ? runWithoutEnvoy(run) : runWithEnvoy(run, { app, launch, health });
}

/** The agent's logger: with --print-bootstrap stdout is the bootstrap, so log lines go to stderr. */
function proxyLogger(options: RunProxyOptions): Logger {
  const levels = parseLogLevels(options.logLevel);
  const pretty = !options.printBootstrap && !options.logAsJson && process.stdout.isTTY;
  return createLogger({ level: levels.default, components: levels.components, pretty, fd: options.printBootstrap ? 2 : 1 });
}

/** What both recipes start from, once the bootstrap is rendered. */
interface ProxyRun {
  config: AgentConfig;
  logger: Logger;
  bootstrap: Awaited<ReturnType<typeof prepareBootstrap>>;
  ca: Awaited<ReturnType<typeof resolveCaSettings>>;
  env: AgentEnv;
  upstream: ReturnType<typeof xdsUpstream>;
}

/** DISABLE_ENVOY: proxyless gRPC, the agent relays xDS for the app and writes its bootstrap. */
async function runWithoutEnvoy({ config, logger, bootstrap, ca, env, upstream }: ProxyRun): Promise<number> {
  await checkXdsUpstream(upstream);
  logStarting(logger, bootstrap.nodeId, config);
  const inputs = {
    ...bootstrap,
    caSettings: ca && { ...ca, outputShared: true },
    upstream,
    bootstrapPath: grpcBootstrapPath(config, env)!,
    xdsSocketPath: xdsSocketPath(config),
    readinessSocketPath: readinessSocketPath(config),
    guard: processGuard,
  };
  return runProxylessRecipe(runtimeContext(config, logger), inputs);
}

type EnvoyParts = { app: ReturnType<typeof appSettings>; launch: EnvoyLaunch; health: ReturnType<typeof healthSettings> };

async function runWithEnvoy(run: ProxyRun, parts: EnvoyParts): Promise<number> {
  const { config, logger, bootstrap, env, upstream } = run;
  await checkBinary(config.binaryPath);
  await checkXdsUpstream(upstream);
  await checkEnvoyPortsFree(config, { ...bootstrap.listenerHosts, secureMetrics: bootstrap.secureMetrics });
  logStarting(logger, bootstrap.nodeId, config);
  return runEnvoyRecipe(runtimeContext(config, logger), {
    bootstrap, launch: parts.launch, sockets: { xds: xdsSocketPath(config), readiness: readinessSocketPath(config) }, upstream,
    caSettings: run.ca, app: parts.app, grpcBootstrapPath: grpcBootstrapPath(config, env), dns: { settings: env.dns, namespace: env.namespace },
    wasm: env.wasm, guard: processGuard, health: parts.health,
  });
}

function logStarting(logger: Logger, node: string, config: AgentConfig): void {
  logger.info({ node, version: agentVersion(), ...startupPorts(config), config }, 'pilot-agent starting');
}

/** GRPC_XDS_BOOTSTRAP, else <configPath>/grpc-bootstrap.json when Envoy is off. */
function grpcBootstrapPath(config: AgentConfig, { proxyless }: AgentEnv): string | undefined {
  return proxyless.grpcBootstrap ?? (proxyless.disableEnvoy ? join(config.configPath, 'grpc-bootstrap.json') : undefined);
}

/** One line for each input given but not used: obsolete, unimplemented or unknown flags and ProxyConfig fields. */
function noteIgnoredInputs(config: AgentConfig, options: RunProxyOptions, logger: Logger): void {
  for (const flag of options.ignoredFlags) logger.warn({ flag }, 'flag is obsolete and ignored');
  for (const flag of options.unimplementedFlags ?? []) logger.warn({ flag }, 'flag is accepted for Istio compatibility but not implemented; ignored');
  if (options.unknownArgs?.length) logger.warn({ args: options.unknownArgs }, 'unknown flags or arguments ignored, as Istio\'s agent ignores them');
  for (const { source, field } of options.proxyConfig?.unknown ?? []) logger.warn({ source, field }, 'ProxyConfig field is not known; ignored');
  const notRendered = 'ProxyConfig tracing provider or service is configured but the bootstrap does not render it; ignored';
  for (const field of config.bootstrapFields?.unrendered ?? []) logger.warn({ field }, notRendered);
  const deltaOnly = 'a waypoint speaks Delta xDS only, as Istio forces it: --deltaXds=false (ISTIO_DELTA_XDS) ignored';
  if (config.deltaXdsForced) logger.warn({ flag: 'deltaXds' }, deltaOnly);
  if (options.proxyConfig?.applied.length) logger.info({ fields: options.proxyConfig.applied }, 'settings taken from ProxyConfig');
}

/** What the status port needs of the app: its probes (rewritten by the injector) and its metrics. */
function appSettings(config: AgentConfig, env: AgentEnv, logger: Logger) {
  const warnProbe = (message: string) => logger.warn({ env: 'ISTIO_KUBE_APP_PROBERS' }, message);
  const statusSettings = env.status;
  const probeTarget = probeNetwork({
    podIp: env.pod.ip || config.ip,
    legacyLocalhost: statusSettings.legacyLocalhostProbes,
    http2: statusSettings.http2Probing,
    keepAlive: statusSettings.probeKeepAlive,
  });
  return {
    probes: parseAppProbers(env.app.probers, probeTarget.destination, warnProbe), probeNetwork: probeTarget,
    metrics: parseAppMetricsTargets(env.app.prometheusAnnotations, config.statusPort), mergeEnvoyStats: statusSettings.mergeEnvoyStats,
  };
}

/** ProxyConfig.readinessProbe (a VM's WorkloadGroup probe), checked now: probed as the app probes are, from 127.0.0.6. */
function healthSettings(options: RunProxyOptions, network: ProbeNetwork, logger: Logger) {
  const source = options.proxyConfig?.origin?.readinessProbe ?? 'ProxyConfig';
  const warn = (message: string) => logger.warn({ source, field: 'readinessProbe' }, message);
  const probe = parseHealthProbe(options.mergedProxyConfig?.readinessProbe, { source, destination: network.destination, warn });
  return probe && { probe, network };
}

/** Envoy's admin is where the custom bootstrap puts it; the agent watches that port. */
async function adoptCustomAdmin(config: AgentConfig, path: string, text: string, logger: Logger): Promise<AgentConfig> {
  const admin = await customAdmin({ path, text, flagPort: config.proxyAdminPort, flagGiven: config.proxyAdminPortGiven === true });
  if (admin === undefined) {
    logger.warn(
      { customConfigFile: path, adminPort: config.proxyAdminPort },
      'custom bootstrap has no admin on a TCP port: the agent cannot see Envoy become LIVE there',
    );
    return config;
  }
  if (admin.port !== config.proxyAdminPort)
    logger.info({ customConfigFile: path, adminPort: admin.port, defaultAdminPort: config.proxyAdminPort }, 'admin port taken from the custom bootstrap');
  return { ...config, proxyAdminPort: admin.port, proxyAdminHost: admin.host };
}

/** The ports and paths an operator looks for first in the startup line. */
function startupPorts(config: AgentConfig) {
  const { proxyAdminPort: admin, statusPort: status, readinessPort: readiness, prometheusPort: prometheus } = config;
  return { ports: { admin, status, readiness, prometheus }, paths: { config: config.configPath, envoy: config.binaryPath, certs: config.certDir } };
}

async function prepareBootstrap(resolved: AgentConfig, { env, mergedProxyConfig, proxyMetadataSource, logAsJson }: RunProxyOptions) {
  let config = resolved;
  const role = await resolveRole({
    type: config.proxyType, registry: config.registry, ip: config.ip, id: config.id, domain: config.domain, pod: env.pod,
    findPrivateIp: () => waitForPrivateIp({ interfaces: networkInterfaces, clock: systemClock, timeoutMs: 120_000, intervalMs: 100 }),
  });
  const nodeId = serviceNode(role);
  const secureMetrics = { envoy: env.bootstrap.secureMetricsPort, merged: env.bootstrap.secureMergedMetricsPort };
  const metadata = await nodeMetadata(config, role, env.node, mergedProxyConfig, secureMetrics, proxyMetadataSource);
  config = { ...config, serviceCluster: serviceCluster(config.serviceCluster, metadata) };
  const configDir = await prepareConfigDir(config.configPath);
  const { dualStack, metricsLocalhostOnly } = env.bootstrap;
  const platform = await localityBesideLabels(metadata, env.platform);
  const inputs = {
    nodeId, metadata, xdsSocketPath: xdsSocketPath(config), readinessSocketPath: readinessSocketPath(config), logAsJson: logAsJson === true,
    dualStack, metricsLocalhostOnly, secureMetrics, platformLocality: platform?.locality,
  };
  const text = await renderBootstrap(config, inputs);
  // The Delta→SotW fallback's bootstrap, rendered only if a server without Delta is met (never for an operator's own file).
  // Never for a waypoint: Istio keeps it on Delta, which its metadata discovery needs.
  const fallback = config.deltaXds && !config.customConfigFile && config.proxyType !== 'waypoint';
  const renderSotw = fallback ? () => renderBootstrap({ ...config, deltaXds: false }, inputs) : undefined;
  const hosts = listenerHosts(instanceIps(inputs), dualStack);
  const { serviceCluster: cluster } = config;
  const locality = envoyLocality(localityFromLabels(metadata.LABELS as Record<string, string> | undefined) ?? platform?.locality);
  return { nodeId, metadata, text, renderSotw, configDir, domain: role.domain, serviceCluster: cluster, listenerHosts: hosts, secureMetrics, platform,
    locality };
}

/** An existing --configPath keeps its owner and mode; another user owning it is worth a warning, not a chown. */
function warnIfConfigDirIsForeign(path: string, dir: ConfigDir, to: Logger | NodeJS.WritableStream): void {
  if (dir.foreignOwner === undefined) return;
  const { uid } = dir.foreignOwner;
  const mode = dir.foreignOwner.mode.toString(8).padStart(4, '0');
  const advice = 'that user can replace what the agent writes there; give the agent a directory of its own';
  if ('warn' in to) to.warn({ configPath: path, uid, mode, advice }, 'config directory belongs to another user; left as is');
  else to.write(`pilot-agent: warning: --configPath ${path} belongs to uid ${uid} (mode ${mode}); left as is (${advice})\n`);
}

/** Envoy reaches the discovery server through the agent's relay on this socket. */
const xdsSocketPath = (config: AgentConfig) => join(config.configPath, 'XDS');
/** Envoy's readiness listener reaches the status server on this socket, never on its TCP port. */
const readinessSocketPath = (config: AgentConfig) => join(config.configPath, 'READINESS');
