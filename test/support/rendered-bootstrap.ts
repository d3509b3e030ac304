/**
 * The sidecar bootstrap as the agent renders it from Istio's defaults, parsed,
 * and the shape of its listeners' addresses: for the tests of what it binds.
 */
import type { BootstrapContext } from '../../src/bootstrap/variables.ts';
import { renderBootstrap } from '../../src/bootstrap/render.ts';
import { mergeProxyConfigs } from '../../src/settings/proxy-config-sources.ts';
import { resolveAgentConfig } from '../../src/settings/resolve-agent-config.ts';

export interface SocketAddress {
  address: string;
  port_value: number;
}

export interface RenderedListener {
  name: string;
  address: { socket_address: SocketAddress };
  additional_addresses?: { address: { socket_address: SocketAddress } }[];
}

/** Renders for `context` with command-line `values` (each reported as a default) and no PROXY_CONFIG; the JSON parsed as `T`. */
export async function renderSidecarBootstrap<T>(context: BootstrapContext, values: Record<string, unknown> = {}): Promise<T> {
  const commandLine = { values, sourceOf: () => 'default' };
  const { config } = resolveAgentConfig({ proxyType: 'sidecar', commandLine, proxyConfig: mergeProxyConfigs([]) });
  return JSON.parse(await renderBootstrap(config, context)) as T;
}
