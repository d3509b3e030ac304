import type { ProxyType } from './proxy-type.ts';
import { applyProxyConfig, type ValueSource } from './apply-proxy-config.ts';
import { bootstrapProxyConfig } from './bootstrap-proxy-config.ts';
import { concurrencyFromCpuLimit } from './envoy-env.ts';
import { extraStatTags, proxyStatsMatcher, type MergedProxyConfig } from './proxy-config-sources.ts';
import { splitEnvoyLogLevel } from './parse-values.ts';
import { proxySettings, type AgentConfig } from './proxy-settings.ts';
import { attributeOf, keyOf, settleSetting } from './setting.ts';

/** What cli/ parsed: flag values keyed as commander keys them, and where each came from (cli, env, default). */
export interface CommandLineSource {
  values: Readonly<Record<string, unknown>>;
  sourceOf: ValueSource;
}

export interface ResolveAgentConfigOptions {
  proxyType: ProxyType;
  commandLine: CommandLineSource;
  /** The mesh file's defaultConfig, PROXY_CONFIG and the pod annotation, merged (readProxyConfigSources). */
  proxyConfig: MergedProxyConfig;
  /** For the env-only settings (ISTIO_CPU_LIMIT); none read when absent. */
  env?: NodeJS.ProcessEnv;
}

/**
 * The typed config from every source: the command line and the flags' env
 * vars over ProxyConfig over the rows' defaults. Also returns the
 * ProxyConfig fields that took effect, for the start-up log.
 */
export function resolveAgentConfig(options: ResolveAgentConfigOptions): { config: AgentConfig; applied: string[] } {
  const values = { ...options.commandLine.values };
  const applied = applyProxyConfig({ specs: proxySettings, flags: values, sourceOf: options.commandLine.sourceOf, merged: options.proxyConfig });
  // Set on the command line, by the flag's env var or by ProxyConfig (not the default).
  const given = (field: string) => options.commandLine.sourceOf(field) === 'cli' || options.commandLine.sourceOf(field) === 'env' || applied.includes(field);
  const fromCpuLimit = concurrencyFromCpuLimit({ env: options.env ?? {}, setElsewhere: given('concurrency') });
  if (fromCpuLimit !== undefined) values.concurrency = fromCpuLimit;
  const config = {
    ...withLogLevelsSplit(settleAgentConfig(options.proxyType, values)),
    proxyStatsMatcher: proxyStatsMatcher(options.proxyConfig),
    extraStatTags: extraStatTags(options.proxyConfig),
    proxyAdminPortGiven: given('proxyAdminPort'),
    controlPlaneAuthPolicyGiven: given('controlPlaneAuthPolicy'),
  } as AgentConfig;
  config.bootstrapFields = bootstrapProxyConfig(options.proxyConfig, options.env);
  // Istio's bootstrap forces Delta for a waypoint: its metadata discovery has no State of the World form.
  if (options.proxyType === 'waypoint' && !config.deltaXds) Object.assign(config, { deltaXds: true, deltaXdsForced: true });
  return { config, applied };
}

/** `--proxyLogLevel=info,misc:error` as Istio splits it: the level, and component levels that win over --proxyComponentLogLevel. */
function withLogLevelsSplit(config: AgentConfig): AgentConfig {
  const { level, components } = splitEnvoyLogLevel(config.proxyLogLevel);
  // Only component levels given: Envoy keeps its own default level, as Istio passes no -l then.
  return { ...config, proxyLogLevel: level ?? 'info', proxyComponentLogLevel: components ?? config.proxyComponentLogLevel };
}

/** Each row's config value from the value the sources settled on, keyed as commander keys flags; unset: its default. */
function settleAgentConfig(proxyType: ProxyType, values: Readonly<Record<string, unknown>>): AgentConfig {
  const config: Record<string, unknown> = { proxyType };
  for (const setting of proxySettings) config[keyOf(setting)] = settleSetting(setting, values[attributeOf(setting)]);
  return config as AgentConfig;
}
