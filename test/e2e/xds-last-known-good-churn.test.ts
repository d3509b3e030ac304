import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { startAgent, type RunningAgent } from '../support/agent.ts';
import { deferStop, suiteCleanup } from '../support/cleanup.ts';
import { pollUntil } from '../support/poll.ts';
import { startPeer, type Peer } from '../support/peer.ts';
import { freePort } from '../support/ports.ts';
import { edsCluster, endpoints } from '../support/resources.ts';
import { get as getStatus } from '../support/status-agent.ts';
import { startUpstream, type Upstream } from '../support/upstream.ts';
import { routedService, waitForBody } from '../support/routed-service.ts';

const eds = 'type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment';
type Kept = { names: number; resources?: number };

/** Issue 44: a ServiceEntry added and removed again and again must leave nothing behind in what the agent keeps. */
describe('last-known-good under pushes (Delta): what Envoy unsubscribes from leaves the kept subscription and config', () => {
  let upstream: Upstream;
  let peer: Peer;
  let listenerPort: number;
  let statusPort: number;
  let agent: RunningAgent;
  const cleanup = suiteCleanup();

  before(async () => {
    upstream = await startUpstream('app');
    cleanup.defer(() => upstream.close());
    listenerPort = await freePort();
    peer = await startPeer(routedService(listenerPort, [{ prefix: '/', cluster: 'cluster_a', port: upstream.port }]));
    cleanup.defer(() => peer.stop());
    statusPort = await freePort();
    agent = await startAgent({ discoveryAddress: peer.address, args: ['--statusPort', String(statusPort), '--deltaXds'] });
    deferStop(cleanup, agent, (result) => assert.equal(result.exitCode, 0, agent.stderr()));
  });

  const keptEndpoints = async (): Promise<Kept | undefined> => {
    const debug = JSON.parse((await getStatus(statusPort, '/debug/xds')).body) as { kept?: { delta: Record<string, Kept> } };
    return debug.kept?.delta[eds];
  };

  it('after six clusters each added then removed, the kept endpoints are cluster_a\'s alone, by name and by resource', async () => {
    await waitForBody(listenerPort, '/', 'app');
    const base = routedService(listenerPort, [{ prefix: '/', cluster: 'cluster_a', port: upstream.port }]);
    for (let push = 1; push <= 6; push++) {
      const name = `outbound|80||se-${push}.churn.example`;
      await peer.setResources([...base, edsCluster(name), endpoints(name, upstream.port)]);
      // Envoy holds the new cluster's endpoints (kept: two names), then the cluster goes again.
      await pollUntil(keptEndpoints, { what: `${name}'s endpoints kept`, timeoutMs: 20_000, intervalMs: 50, accept: (kept) => kept?.names === 2 });
      await peer.setResources(base);
      await pollUntil(keptEndpoints, { what: `${name} unsubscribed`, timeoutMs: 20_000, intervalMs: 50, accept: (kept) => kept?.names === 1 });
    }
    assert.deepEqual(await keptEndpoints().then((kept) => ({ names: kept?.names, resources: kept?.resources })), { names: 1, resources: 1 });
    await waitForBody(listenerPort, '/', 'app');
  });
});
