import { join } from 'node:path';
import type { AgentEnv } from '../settings/agent-inputs.ts';
import type { AgentConfig } from '../settings/proxy-settings.ts';

/** Envoy reaches the discovery server through the agent's relay on this socket. */
export const xdsSocketPath = (config: AgentConfig) => join(config.configPath, 'XDS');
/** Envoy's readiness listener reaches the status server on this socket, never on its TCP port. */
export const readinessSocketPath = (config: AgentConfig) => join(config.configPath, 'READINESS');

/** GRPC_XDS_BOOTSTRAP, else <configPath>/grpc-bootstrap.json when Envoy is off. */
export function grpcBootstrapPath(config: AgentConfig, { proxyless }: AgentEnv): string | undefined {
  return proxyless.grpcBootstrap ?? (proxyless.disableEnvoy ? join(config.configPath, 'grpc-bootstrap.json') : undefined);
}
