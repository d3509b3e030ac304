import { exactPathListener } from './exact-path-listener.ts';
import { additionalAddresses, type ListenerHosts } from './listener-hosts.ts';

/**
 * Istio's readiness hop: Envoy listens on the readiness port (15021) and
 * passes `GET /healthz/ready`, and nothing else, to the agent's status
 * server, so a probe that passes also proves Envoy accepts connections.
 */
export function readinessListener(readinessPort: number, hosts: Pick<ListenerHosts, 'wildcard' | 'additional'>): unknown {
  return exactPathListener({
    name: 'agent_readiness', host: hosts.wildcard, port: readinessPort, additionalAddresses: additionalAddresses(hosts.additional?.wildcard, readinessPort),
    statPrefix: 'agent', path: '/healthz/ready', cluster: 'agent',
  });
}

/**
 * The static cluster that reaches the agent's status server on its own Unix
 * socket, not its TCP port: whatever arrives there came through Envoy's
 * pod-facing listener, so the agent serves readiness there and nothing else,
 * and never mistakes such a request for a local caller.
 */
export function agentStatusCluster(socketPath: string): unknown {
  return {
    name: 'agent',
    // The `;` ends the cluster's name for the cluster_name stats tag (stats-tags.ts).
    alt_stat_name: 'agent;',
    type: 'STATIC',
    connect_timeout: '0.250s',
    lb_policy: 'ROUND_ROBIN',
    load_assignment: {
      cluster_name: 'agent',
      endpoints: [{ lb_endpoints: [{ endpoint: { address: { pipe: { path: socketPath } } } }] }],
    },
  };
}
