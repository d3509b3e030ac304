import { createServer } from 'node:net';
import { badFlag } from '../shared/errors.ts';
import type { AgentConfig } from '../settings/proxy-settings.ts';

/** The wildcards Envoy's pod-facing listeners bind (bootstrap/listener-hosts.ts). */
export interface PodFacingHosts {
  wildcard: string;
  additional?: { wildcard: string };
  /** Istio's mTLS metrics listeners, on the first wildcard; 0: none. */
  secureMetrics?: { envoy: number; merged: number };
}

const ipv4Only: PodFacingHosts = { wildcard: '0.0.0.0' };

/** Where Envoy will listen, by the flag that says so (its Prometheus and readiness listeners bind the pod's wildcards). */
export function envoyPorts(config: AgentConfig, hosts: PodFacingHosts = ipv4Only): { flag: string; host: string; port: number }[] {
  const wildcards = [hosts.wildcard, ...(hosts.additional ? [hosts.additional.wildcard] : [])];
  const ports = [
    { flag: '--proxyAdminPort', host: config.proxyAdminHost ?? '127.0.0.1', port: config.proxyAdminPort },
    ...wildcards.map((host) => ({ flag: '--prometheusPort', host, port: config.prometheusPort })),
  ];
  if (config.statusPort !== 0) ports.push(...wildcards.map((host) => ({ flag: '--readinessPort', host, port: config.readinessPort })));
  const secure = hosts.secureMetrics;
  if (secure) {
    ports.push({ flag: 'ENVOY_SECURE_METRICS_PORT', host: hosts.wildcard, port: secure.envoy });
    ports.push({ flag: 'ENVOY_SECURE_MERGED_METRICS_PORT', host: hosts.wildcard, port: secure.merged });
  }
  return ports.filter((entry) => entry.port !== 0 && !config.customConfigFile);
}

/**
 * A port someone else holds is bad input, found in milliseconds here rather
 * than as an Envoy that fails its start over and over. Envoy's own "cannot
 * bind" at start is classified the same way for the race this leaves.
 */
export async function checkEnvoyPortsFree(config: AgentConfig, hosts?: PodFacingHosts): Promise<void> {
  for (const { flag, host, port } of envoyPorts(config, hosts)) {
    const error = await tryBind(host, port);
    if (error) throw badFlag(flag, `port ${port} on ${host} is not free (${error})`);
  }
}

function tryBind(host: string, port: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
    // `::` alone, as Envoy binds it (IPV6_V6ONLY): an IPv4 holder of the port is no clash there.
    server.listen({ host, port, exclusive: true, ipv6Only: host.includes(':') }, () => server.close(() => resolve(undefined)));
  });
}
