import type { ProxyType } from './proxy-type.ts';
import type { BootstrapProxyConfig } from './bootstrap-proxy-config.ts';
import type { StatsInclusion } from './proxy-config-sources.ts';
import { nodeSettings } from './proxy-settings-node.ts';
import { envoySettings } from './proxy-settings-envoy.ts';
import { portsCertsSettings } from './proxy-settings-ports-certs.ts';
import { statsLifecycleSettings } from './proxy-settings-stats-lifecycle.ts';
import { discoverySettings } from './proxy-settings-discovery.ts';
import { declareSettings, type SettingValues } from './setting.ts';

/** The settings of `pilot-agent proxy` that make up its config (`AgentConfig`), one row each. */
export const proxySettings = declareSettings([...nodeSettings, ...envoySettings, ...portsCertsSettings, ...statsLifecycleSettings, ...discoverySettings]);

/** Everything `pilot-agent proxy` was told, typed and validated: one field per row above, plus what no flag sets. */
export type AgentConfig = SettingValues<typeof proxySettings> & {
  proxyType: ProxyType;
  /** ProxyConfig.proxyStatsMatcher: below the flags and the pod annotations, as in Istio. */
  proxyStatsMatcher?: StatsInclusion;
  /** ProxyConfig.extraStatTags: labels a stats extension puts in stat names, extracted as Istio does. */
  extraStatTags?: readonly string[];
  /** ProxyConfig's runtimeValues, statsCompression and connection limit, and what it configures that the bootstrap does not render. */
  bootstrapFields?: BootstrapProxyConfig;
  /** Where Envoy's admin listens and the agent calls it: the pod's loopback, ::1 when it is IPv6-only (bootstrap/listener-hosts.ts); unset: 127.0.0.1. */
  proxyAdminHost?: string;
  /** Whether the command line or ProxyConfig set --proxyAdminPort (a custom bootstrap's admin must then agree). */
  proxyAdminPortGiven?: boolean;
  /** A waypoint given --deltaXds=false (or ISTIO_DELTA_XDS=false): Delta anyway, as Istio forces it, and one warning. */
  deltaXdsForced?: boolean;
  /** Whether the command line or ProxyConfig set --controlPlaneAuthPolicy (MUTUAL_TLS given asks for Istio 1.1's certificate files). */
  controlPlaneAuthPolicyGiven?: boolean;
};
