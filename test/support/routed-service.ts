import type { RunningAgent } from './agent.ts';
import { edsCluster, endpoints, httpListener, routeConfig } from './resources.ts';
import { pollUntil } from './poll.ts';

/** Listener → route → one EDS cluster per route. */
export function routedService(listenerPort: number, routes: { prefix: string; cluster: string; port: number }[], extra: unknown[] = []): unknown[] {
  return [
    httpListener('listener_0', listenerPort, 'local_route'),
    routeConfig('local_route', routes),
    ...routes.flatMap((route) => [edsCluster(route.cluster), endpoints(route.cluster, route.port)]),
    ...extra,
  ];
}

/** One GET: the body on a 200, or what went wrong. */
export async function get(port: number, path: string): Promise<string> {
  const response = await fetch(`http://127.0.0.1:${port}${path}`).catch((error: Error) => error);
  if (response instanceof Error) return `error: ${String(response.cause ?? response)}`;
  const body = await response.text();
  return response.status === 200 ? body : `HTTP ${response.status} ${body}`;
}

/** Polls until GET answers `expected`; fails with the last answer. */
export async function waitForBody(port: number, path: string, expected: string, timeoutMs = 20_000): Promise<void> {
  await pollUntil(() => get(port, path), {
    what: `GET :${port}${path} to answer "${expected}"`,
    timeoutMs,
    intervalMs: 50,
    accept: (answer) => answer === expected,
    show: String,
  });
}

/** Sends `count` requests one after the other; returns the answers that were not `expected`. */
export async function failures(port: number, path: string, expected: string, count: number): Promise<string[]> {
  const bad: string[] = [];
  for (let i = 0; i < count; i++) {
    const answer = await get(port, path);
    if (answer !== expected) bad.push(answer);
  }
  return bad;
}

export async function configDump(agent: RunningAgent): Promise<string> {
  return (await fetch(`http://127.0.0.1:${agent.adminPort}/config_dump`)).text();
}

/** Waits for the nth (0-based) "envoy started" line; returns its pid. */
export async function envoyStarted(agent: RunningAgent, nth: number, timeoutMs = 30_000): Promise<number> {
  await agent.log.waitFor(() => agent.envoyPids().length > nth, timeoutMs, `Envoy start #${nth + 1}`);
  return agent.envoyPids()[nth]!;
}

/** An HTTPS listener whose certificate comes over ADS as an SDS Secret named `secretName`. */
export function sdsListener(port: number, secretName: string): unknown {
  const listener = httpListener('https_sds', port, 'local_route') as { filter_chains: Record<string, unknown>[] };
  listener.filter_chains[0]!.transport_socket = {
    name: 'envoy.transport_sockets.tls',
    typed_config: {
      '@type': 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext',
      common_tls_context: {
        // Short: a restored agent has no Secret (never on disk); this listener must not hold Envoy's start for 15 s.
        tls_certificate_sds_secret_configs: [{ name: secretName, sds_config: { ads: {}, resource_api_version: 'V3', initial_fetch_timeout: '1s' } }],
      },
    },
  };
  return listener;
}

export function secret(name: string, pair: { cert: string; key: string }): unknown {
  return {
    '@type': 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret',
    name,
    tls_certificate: { certificate_chain: { inline_string: pair.cert }, private_key: { inline_string: pair.key } },
  };
}
