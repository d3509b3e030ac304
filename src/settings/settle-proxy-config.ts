import type { ProxyType } from '../role/role.ts';
import { proxySettings, type ProxyConfig } from './proxy-settings.ts';
import { attributeOf, keyOf, settleSetting } from './setting.ts';

/**
 * The typed config from the values the sources settled on, keyed as
 * commander keys flags (command line, env, then ProxyConfig laid under
 * them by applyProxyConfig); a setting none of them set takes its default.
 */
export function settleProxyConfig(proxyType: ProxyType, flags: Readonly<Record<string, unknown>>): ProxyConfig {
  const config: Record<string, unknown> = { proxyType };
  for (const setting of proxySettings) config[keyOf(setting)] = settleSetting(setting, flags[attributeOf(setting)]);
  return config as ProxyConfig;
}
