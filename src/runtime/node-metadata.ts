import { networkInterfaces } from 'node:os';
import { basename } from 'node:path';
import { protoDuration } from '../bootstrap/variables.ts';
import { buildNodeMetadata, type NodeMetadata } from '../role/metadata.ts';
import { excludedInterfaces, instanceIps } from '../role/private-ip.ts';
import type { Role } from '../role/role.ts';
import { formatHostPort } from '../shared/host-port.ts';
import type { PodInfo } from '../settings/pod-info.ts';
import type { NodeEnv } from '../settings/pod-env.ts';
import type { AgentConfig } from '../settings/proxy-settings.ts';
import { effectiveAuthPolicy } from './xds-upstream.ts';

/** The node metadata for this proxy: env, downward-API files (read once, settings/pod-info.ts) and what the agent runs with. */
export function nodeMetadata(
  config: AgentConfig, role: Role, node: NodeEnv, podInfo: PodInfo, mergedProxyConfig?: Record<string, unknown>,
  secureMetrics?: { envoy: number; merged: number }, proxyMetadataSource?: string,
): NodeMetadata {
  return buildNodeMetadata({
    node,
    podInfo,
    agent: {
      instanceIps: instanceIps(role.ip, networkInterfaces(), excludedInterfaces(podInfo.annotations)),
      envoyStatusPort: config.statusPort === 0 ? 0 : config.readinessPort,
      envoyPrometheusPort: config.prometheusPort,
      envoySecureMetricsPort: secureMetrics?.envoy,
      envoySecureMergedMetricsPort: secureMetrics?.merged,
      exitOnZeroActiveConnections: config.exitOnZeroActiveConnections,
      proxyConfig: agentProxyConfig(config),
      mergedProxyConfig: { ...istioProxyConfigDefaults, ...mergedProxyConfig },
      proxyMetadataSource,
      pilotSan: effectiveAuthPolicy(config) === 'MUTUAL_TLS' ? [pilotSan(config)] : undefined,
      skipDeprecatedLogs: config.skipDeprecatedLogs,
      workloadIdentitySocketFile: basename(config.sdsSocket),
    },
  });
}

/** ProxyConfig fields Istio's DefaultProxyConfig sets that the agent does not decide: the node carries them as Istio's does. */
const istioProxyConfigDefaults = { statNameLength: 189 };

/** The ProxyConfig fields (protojson names and forms) that the agent's own settings decide. */
export function agentProxyConfig(config: AgentConfig): Record<string, unknown> {
  return {
    configPath: config.configPath,
    binaryPath: config.binaryPath,
    serviceCluster: config.serviceCluster,
    drainDuration: protoDuration(config.drainDurationMs),
    terminationDrainDuration: protoDuration(config.terminationDrainDurationMs),
    discoveryAddress: formatHostPort(config.discoveryAddress),
    proxyAdminPort: config.proxyAdminPort,
    statusPort: config.statusPort,
    // protojson leaves out NONE, the enum's zero, as Istio's node does.
    ...(effectiveAuthPolicy(config) === 'MUTUAL_TLS' ? { controlPlaneAuthPolicy: 'MUTUAL_TLS' } : {}),
    ...(config.concurrency > 0 ? { concurrency: config.concurrency } : {}),
  };
}

/** The name istiod's certificate carries, as Istio's agent guesses it: the server name, else the address's host (localhost: istiod's). */
function pilotSan(config: AgentConfig): string {
  if (config.xdsServerName !== undefined) return config.xdsServerName;
  return config.discoveryAddress.host === 'localhost' ? 'istiod.istio-system.svc' : config.discoveryAddress.host;
}
