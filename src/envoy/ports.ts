import { createServer } from 'node:net';
import { badFlag } from '../shared/errors.ts';
import type { AgentConfig } from '../settings/proxy-settings.ts';

/** Where Envoy will listen, by the flag that says so (Envoy's own Prometheus and readiness listeners bind 0.0.0.0). */
export function envoyPorts(config: AgentConfig): { flag: string; host: string; port: number }[] {
  const ports = [
    { flag: '--proxyAdminPort', host: '127.0.0.1', port: config.proxyAdminPort },
    { flag: '--prometheusPort', host: '0.0.0.0', port: config.prometheusPort },
  ];
  if (config.statusPort !== 0) ports.push({ flag: '--readinessPort', host: '0.0.0.0', port: config.readinessPort });
  return ports.filter((entry) => entry.port !== 0 && !config.customConfigFile);
}

/**
 * A port someone else holds is bad input, found in milliseconds here rather
 * than as an Envoy that fails its start over and over. Envoy's own "cannot
 * bind" at start is classified the same way for the race this leaves.
 */
export async function checkEnvoyPortsFree(config: AgentConfig): Promise<void> {
  for (const { flag, host, port } of envoyPorts(config)) {
    const error = await tryBind(host, port);
    if (error) throw badFlag(flag, `port ${port} on ${host} is not free (${error})`);
  }
}

function tryBind(host: string, port: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
    server.listen({ host, port, exclusive: true }, () => server.close(() => resolve(undefined)));
  });
}
