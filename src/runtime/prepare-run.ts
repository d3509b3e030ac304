/**
 * What `pilot-agent proxy` runs, prepared from its settled inputs before
 * anything starts: the CA settings, the app's probes and metrics, the role
 * and the rendered bootstrap, Envoy's launch, the upstream and the sockets,
 * as one plan for one of the two recipes. It writes only --configPath (made
 * when missing) and starts nothing: preflight.ts checks the plan, then the
 * recipe runs it (run-plan.ts).
 */
import { customAdmin } from '../bootstrap/custom-admin.ts';
import { metadataDiscoveryAsked } from '../bootstrap/metadata-discovery.ts';
import { readBootstrapOverride } from '../bootstrap/override.ts';
import { instanceIps } from '../bootstrap/variables.ts';
import type { ConfigDir } from '../bootstrap/write.ts';
import { resolveCaSettings } from '../ca/resolve.ts';
import { localAddressIpVersion, type EnvoyLaunch } from '../envoy/args.ts';
import { parseHealthProbe } from '../health/probe-config.ts';
import type { AgentEnv } from '../settings/agent-inputs.ts';
import type { AgentConfig } from '../settings/proxy-settings.ts';
import type { Logger } from '../shared/log.ts';
import { parseAppMetricsTargets } from '../status/app-metrics.ts';
import { parseAppProbers } from '../status/app-probes/config.ts';
import { probeNetwork, type ProbeNetwork } from '../status/app-probes/probe-target.ts';
import type { EnvoyRecipeInputs } from './envoy-recipe.ts';
import { prepareBootstrap, type BootstrapInputs, type PreparedBootstrap } from './prepare-bootstrap.ts';
import { processGuard } from './process-guard.ts';
import type { ProxylessInputs } from './proxyless-recipe.ts';
import { grpcBootstrapPath, readinessSocketPath, xdsSocketPath } from './sockets.ts';
import { xdsUpstream } from './xds-upstream.ts';

export interface RunInputs extends BootstrapInputs {
  /** The settled config (readAgentInputs, checkResolvedConfig). */
  config: AgentConfig;
  /** Which ProxyConfig source set each field (readinessProbe's names its warnings). */
  proxyConfigOrigin?: Readonly<Record<string, string>>;
  /** The command's env, as the CA settings read it. */
  processEnv: NodeJS.ProcessEnv;
  logger: Logger;
  /** --print-bootstrap: a foreign --configPath is one plain line on this stream, not a log line. */
  printTo?: NodeJS.WritableStream;
}

/** One run, prepared: the config it runs with (serviceCluster and a custom bootstrap's admin port settled), and its recipe's inputs. */
export interface RunPlan {
  config: AgentConfig;
  bootstrap: PreparedBootstrap;
  recipe: { kind: 'envoy'; inputs: EnvoyRecipeInputs } | { kind: 'proxyless'; inputs: ProxylessInputs };
}

/** Prepares the run; bad input throws naming it (exit 2) before anything but --configPath is made. */
export async function prepareRun(inputs: RunInputs): Promise<RunPlan> {
  const { config: resolved, env, logger } = inputs;
  const ca = await resolveCaSettings(resolved, inputs.processEnv);
  // Every env value was checked (readAgentInputs) before --configPath is made: bad input leaves nothing behind.
  const app = appSettings(resolved, env, logger);
  const health = healthSettings(inputs, app.probeNetwork);
  const configYaml = resolved.bootstrapOverride ? await readBootstrapOverride(resolved.bootstrapOverride, env.hostIp) : undefined;
  const bootstrap = await prepareBootstrap(resolved, inputs);
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
  warnIfConfigDirIsForeign(config.configPath, bootstrap.configDir, inputs.printTo ?? logger);
  const upstream = xdsUpstream(config, env.xdsMetadata, env.provCert);
  const [xds, readiness] = [xdsSocketPath(config), readinessSocketPath(config)];
  if (env.proxyless.disableEnvoy) {
    const caSettings = ca && { ...ca, outputShared: true };
    const paths = { bootstrapPath: grpcBootstrapPath(config, env)!, xdsSocketPath: xds, readinessSocketPath: readiness };
    return { config, bootstrap, recipe: { kind: 'proxyless', inputs: { ...bootstrap, caSettings, upstream, ...paths, guard: processGuard } } };
  }
  const recipe: EnvoyRecipeInputs = {
    bootstrap, launch, sockets: { xds, readiness }, upstream, caSettings: ca, app, grpcBootstrapPath: grpcBootstrapPath(config, env),
    dns: { settings: env.dns, namespace: env.namespace }, wasm: env.wasm, guard: processGuard, health,
  };
  return { config, bootstrap, recipe: { kind: 'envoy', inputs: recipe } };
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
function healthSettings(inputs: RunInputs, network: ProbeNetwork) {
  const source = inputs.proxyConfigOrigin?.readinessProbe ?? 'ProxyConfig';
  const warn = (message: string) => inputs.logger.warn({ source, field: 'readinessProbe' }, message);
  const probe = parseHealthProbe(inputs.mergedProxyConfig?.readinessProbe, { source, destination: network.destination, warn });
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

/** An existing --configPath keeps its owner and mode; another user owning it is worth a warning, not a chown. */
function warnIfConfigDirIsForeign(path: string, dir: ConfigDir, to: Logger | NodeJS.WritableStream): void {
  if (dir.foreignOwner === undefined) return;
  const { uid } = dir.foreignOwner;
  const mode = dir.foreignOwner.mode.toString(8).padStart(4, '0');
  const advice = 'that user can replace what the agent writes there; give the agent a directory of its own';
  if ('warn' in to) to.warn({ configPath: path, uid, mode, advice }, 'config directory belongs to another user; left as is');
  else to.write(`pilot-agent: warning: --configPath ${path} belongs to uid ${uid} (mode ${mode}); left as is (${advice})\n`);
}
