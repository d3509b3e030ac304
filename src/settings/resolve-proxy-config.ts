import type { ProxyType } from '../role/role.ts';
import { applyProxyConfig, type ValueSource } from './apply-proxy-config.ts';
import { proxyStatsMatcher, type MergedProxyConfig } from './proxy-config-sources.ts';
import { proxySettings, type ProxyConfig } from './proxy-settings.ts';
import { settleProxyConfig } from './settle-proxy-config.ts';

/** What cli/ parsed: flag values keyed as commander keys them, and where each came from (cli, env, default). */
export interface CommandLineSource {
  values: Readonly<Record<string, unknown>>;
  sourceOf: ValueSource;
}

export interface ResolveProxyConfigOptions {
  proxyType: ProxyType;
  commandLine: CommandLineSource;
  /** The mesh file's defaultConfig, PROXY_CONFIG and the pod annotation, merged (readProxyConfigSources). */
  proxyConfig: MergedProxyConfig;
}

/**
 * The typed config from every source: the command line and the flags' env
 * vars over ProxyConfig over the rows' defaults. Also returns the
 * ProxyConfig fields that took effect, for the start-up log.
 */
export function resolveProxyConfig(options: ResolveProxyConfigOptions): { config: ProxyConfig; applied: string[] } {
  const values = { ...options.commandLine.values };
  const applied = applyProxyConfig({ specs: proxySettings, flags: values, sourceOf: options.commandLine.sourceOf, merged: options.proxyConfig });
  const config = { ...settleProxyConfig(options.proxyType, values), proxyStatsMatcher: proxyStatsMatcher(options.proxyConfig) };
  return { config, applied };
}
