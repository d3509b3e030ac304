import { FileRefused, readBoundedFile } from '../shared/bounded-file.ts';
import { networkInterfaces } from 'node:os';
import { basename, join } from 'node:path';
import { protoDuration } from '../bootstrap/variables.ts';
import { parseDownwardApi } from '../role/downward-api.ts';
import { buildNodeMetadata, type NodeEnv, type NodeMetadata, type PodInfo } from '../role/metadata.ts';
import { excludedInterfaces, instanceIps } from '../role/private-ip.ts';
import type { Role } from '../role/role.ts';
import { badFile } from '../shared/errors.ts';
import { formatHostPort } from '../shared/host-port.ts';
import type { AgentConfig } from '../settings/proxy-settings.ts';
import { effectiveAuthPolicy } from '../runtime/xds-upstream.ts';

/** Kubernetes caps all of a pod's labels or annotations at 256 KiB; anything far past that is not a downward-API file. */
const maxPodInfoBytes = 1024 * 1024;

/** The node metadata for this proxy: env, downward-API files and what the agent runs with. */
export async function nodeMetadata(
  config: AgentConfig, role: Role, node: NodeEnv, mergedProxyConfig?: Record<string, unknown>,
  secureMetrics?: { envoy: number; merged: number }, proxyMetadataSource?: string,
): Promise<NodeMetadata> {
  const podInfo = await readPodInfo(config.podInfoDir);
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

/** labels and annotations from the downward-API directory; a missing file means "not mounted". */
export async function readPodInfo(dir: string): Promise<PodInfo> {
  const [labels, annotations] = await Promise.all([readDownwardApiFile(join(dir, 'labels')), readDownwardApiFile(join(dir, 'annotations'))]);
  return { labels, annotations };
}

async function readDownwardApiFile(path: string): Promise<Record<string, string> | undefined> {
  const text = await readBounded(path);
  if (text === undefined) return undefined;
  const parsed = parseDownwardApi(text);
  if (!parsed.ok) throw badFile(path, `line ${parsed.line}: ${parsed.reason} (Kubernetes downward-API format, key="value")`);
  return parsed.entries;
}

/** A regular file (symlinks followed: the downward API mounts through ..data) within the cap; a FIFO or device is refused, not waited on. */
async function readBounded(path: string): Promise<string | undefined> {
  try {
    return (await readBoundedFile(path, { maxBytes: maxPodInfoBytes })).toString('utf8');
  } catch (error) {
    if (error instanceof FileRefused) throw badFile(path, error.message, error);
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    throw badFile(path, `cannot read pod info (${code ?? (error as Error).message})`, error);
  }
}
