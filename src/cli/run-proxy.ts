import { createLogger, type Logger } from '../shared/log.ts';
import type { AgentConfig } from '../settings/proxy-settings.ts';
import type { AgentEnv } from '../settings/agent-inputs.ts';
import type { PodInfo } from '../settings/pod-info.ts';
import type { CommandContext } from './context.ts';
import { parseLogLevels } from './log-levels.ts';
import { prepareRun } from '../runtime/prepare-run.ts';
import { processGuard } from '../runtime/process-guard.ts';
import { runPlan } from '../runtime/run-plan.ts';

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
  /** The downward-API files, read once (readAgentInputs). */
  podInfo: PodInfo;
}

/**
 * The proxy command end to end: the run prepared (runtime/prepare-run.ts),
 * then printed (--print-bootstrap) or run until a signal or a permanent
 * failure. Resolves the exit code.
 */
export async function runProxy(resolved: AgentConfig, options: RunProxyOptions): Promise<number> {
  const logger = proxyLogger(options);
  processGuard.useReport((level, fields, message) => logger[level](fields, message));
  noteIgnoredInputs(resolved, options, logger);
  const { env, podInfo, mergedProxyConfig, proxyMetadataSource } = options;
  const plan = await prepareRun({
    config: resolved, env, podInfo, mergedProxyConfig, proxyMetadataSource, proxyConfigOrigin: options.proxyConfig?.origin,
    processEnv: options.context.env, logger, logAsJson: options.logAsJson === true, printTo: options.printBootstrap ? options.context.stderr : undefined,
  });
  if (!options.printBootstrap) return runPlan(plan, logger);
  options.context.stdout.write(plan.bootstrap.text);
  return 0;
}

/** The agent's logger: with --print-bootstrap stdout is the bootstrap, so log lines go to stderr. */
function proxyLogger(options: RunProxyOptions): Logger {
  const levels = parseLogLevels(options.logLevel);
  const pretty = !options.printBootstrap && !options.logAsJson && process.stdout.isTTY;
  return createLogger({ level: levels.default, components: levels.components, pretty, fd: options.printBootstrap ? 2 : 1 });
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
