import { networkInterfaces } from 'node:os';
import { listenerHosts } from '../bootstrap/listener-hosts.ts';
import { renderBootstrap } from '../bootstrap/render.ts';
import { instanceIps } from '../bootstrap/variables.ts';
import { prepareConfigDir } from '../bootstrap/write.ts';
import { envoyLocality, localityFromLabels } from '../role/locality.ts';
import { localityBesideLabels } from '../role/platform-locality.ts';
import { waitForPrivateIp, type InterfaceTable } from '../role/private-ip.ts';
import { resolveRole, serviceNode } from '../role/role.ts';
import { serviceCluster } from '../role/service-cluster.ts';
import type { AgentEnv } from '../settings/agent-inputs.ts';
import type { PodInfo } from '../settings/pod-info.ts';
import type { AgentConfig } from '../settings/proxy-settings.ts';
import { systemClock } from '../shared/clock.ts';
import { nodeMetadata } from './node-metadata.ts';
import { readinessSocketPath, xdsSocketPath } from './sockets.ts';

export interface BootstrapInputs {
  env: AgentEnv;
  podInfo: PodInfo;
  /** The merged ProxyConfig (mesh file, PROXY_CONFIG, annotation): the node's PROXY_CONFIG below what the agent runs with. */
  mergedProxyConfig?: Record<string, unknown>;
  /** Which of those set proxyMetadata, for error lines. */
  proxyMetadataSource?: string;
  logAsJson: boolean;
  /** The host's interfaces, where a registry without INSTANCE_IP finds the role's IP (tests: a table of their own). */
  interfaces?: () => InterfaceTable;
}

export type PreparedBootstrap = Awaited<ReturnType<typeof prepareBootstrap>>;

/** The role, the node's metadata and the rendered bootstrap (the SotW fallback's on demand); makes --configPath. */
export async function prepareBootstrap(resolved: AgentConfig, given: BootstrapInputs) {
  const { env, podInfo, mergedProxyConfig, proxyMetadataSource, logAsJson, interfaces = networkInterfaces } = given;
  let config = resolved;
  const role = await resolveRole({
    type: config.proxyType, registry: config.registry, ip: config.ip, id: config.id, domain: config.domain, pod: env.pod,
    findPrivateIp: () => waitForPrivateIp({ interfaces, clock: systemClock, timeoutMs: 120_000, intervalMs: 100 }),
  });
  const nodeId = serviceNode(role);
  const secureMetrics = { envoy: env.bootstrap.secureMetricsPort, merged: env.bootstrap.secureMergedMetricsPort };
  const metadata = nodeMetadata(config, role, env.node, podInfo, mergedProxyConfig, secureMetrics, proxyMetadataSource);
  config = { ...config, serviceCluster: serviceCluster(config.serviceCluster, metadata) };
  const configDir = await prepareConfigDir(config.configPath);
  const { dualStack, metricsLocalhostOnly } = env.bootstrap;
  const platform = await localityBesideLabels(metadata, env.platform);
  const inputs = {
    nodeId, metadata, xdsSocketPath: xdsSocketPath(config), readinessSocketPath: readinessSocketPath(config), logAsJson,
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
