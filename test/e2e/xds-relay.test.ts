import assert from 'node:assert/strict';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { startAgent, type RunningAgent } from '../support/agent.ts';
import { deferStop, suiteCleanup } from '../support/cleanup.ts';
import { startPeer, type Peer } from '../support/peer.ts';
import { freePort } from '../support/ports.ts';
import { edsCluster, endpoints, httpListener, routeConfig } from '../support/resources.ts';
import { startUpstream, type Upstream } from '../support/upstream.ts';
import { pollUntil } from '../support/poll.ts';

/** Polls until GET answers 200 with `expected`, or fails with the last answer. */
async function waitForBody(port: number, path: string, expected: string, timeoutMs = 20_000): Promise<void> {
  const answer = async () => {
    const response = await fetch(`http://127.0.0.1:${port}${path}`);
    return `HTTP ${response.status} ${await response.text()}`;
  };
  await pollUntil(answer, { what: `GET :${port}${path} to answer "${expected}"`, timeoutMs, accept: (last) => last === `HTTP 200 ${expected}`, show: String });
}

async function configDump(agent: RunningAgent): Promise<string> {
  return (await fetch(`http://127.0.0.1:${agent.adminPort}/config_dump`)).text();
}

/** Listener → route(s) → EDS clusters, one per upstream. */
function service(listenerPort: number, routes: { prefix: string; cluster: string; port: number }[], extra: unknown[] = []): unknown[] {
  return [
    httpListener('listener_0', listenerPort, 'local_route'),
    routeConfig('local_route', routes),
    ...routes.flatMap((route) => [edsCluster(route.cluster), endpoints(route.cluster, route.port)]),
    ...extra,
  ];
}

for (const mode of ['sotw', 'delta'] as const) {
  describe(`xDS relay: Envoy ↔ agent ↔ go-control-plane (${mode})`, () => {
    let first: Upstream;
    let second: Upstream;
    let peer: Peer;
    let peerAddress: string;
    let listenerPort: number;
    let agent: RunningAgent;
    const routeA = () => ({ prefix: '/a', cluster: 'cluster_a', port: first.port });
    const routeB = () => ({ prefix: '/b', cluster: 'cluster_b', port: second.port });

    const cleanup = suiteCleanup();

    before(async () => {
      first = await startUpstream(`a (${mode})`);
      cleanup.defer(() => first.close());
      second = await startUpstream(`b (${mode})`);
      cleanup.defer(() => second.close());
      listenerPort = await freePort();
      // A fixed port, so the peer can be restarted where the agent expects it.
      peerAddress = `127.0.0.1:${await freePort()}`;
      peer = await startPeer(service(listenerPort, [routeA()]), { address: peerAddress });
      // A test restarts the peer: stop whichever one is current.
      cleanup.defer(() => peer.stop());
      agent = await startAgent({ discoveryAddress: peerAddress, args: mode === 'delta' ? ['--deltaXds'] : ['--deltaXds=false'] });
      deferStop(cleanup, agent, (result) => assert.equal(result.exitCode, 0, agent.stderr()));
      // Envoy has its first config: the files of the first epoch are all written.
      await waitForBody(listenerPort, '/a', `a (${mode})`);
    });

    it('serves the initial config through the relay on an owner-only socket', async () => {
      await waitForBody(listenerPort, '/a', `a (${mode})`);
      const socket = await stat(join(agent.dir, 'config', 'XDS'));
      assert.ok(socket.isSocket());
      assert.equal(socket.mode & 0o777, 0o600);
      const opened = agent.log.find((entry) => entry.msg === 'Envoy opened an xDS stream');
      assert.equal(opened?.mode, mode);
    });

    it('keeps the config dir and the rendered bootstrap owner-only too', async () => {
      assert.equal((await stat(join(agent.dir, 'config'))).mode & 0o777, 0o700);
      // The runner's umask is 022 or so: 0600 comes from the agent, not from it.
      assert.equal((await stat(join(agent.dir, 'config', 'envoy-rev0.json'))).mode & 0o777, 0o600, 'the rendered bootstrap is 0600');
    });

    describe('a pushed route and cluster', () => {
      before(async () => {
        await peer.setResources(service(listenerPort, [routeA(), routeB()]));
        await waitForBody(listenerPort, '/b', `b (${mode})`);
      });

      it('are relayed to Envoy, and traffic follows', async () => {
        await waitForBody(listenerPort, '/b', `b (${mode})`);
      });

      it('show in config_dump', async () => {
        const dump = await configDump(agent);
        assert.match(dump, /"cluster_b"/);
        assert.match(dump, /"prefix": "\/b"/);
      });
    });

    it('records the error text when Envoy NACKs an invalid resource', async () => {
      // connect_timeout must be > 0: Envoy's validation rejects the cluster.
      const invalid = { ...(edsCluster('cluster_bad') as object), connect_timeout: '-1s' };
      await peer.setResources(service(listenerPort, [routeA(), routeB()], [invalid]));
      const nack = await agent.log.waitFor((entry) => entry.msg === 'Envoy rejected a response (NACK)', 20_000, 'a NACK logged by the agent');
      assert.match(String(nack.type), /Cluster$/);
      assert.match(String(nack.error), /Expected positive duration/);
      await waitForBody(listenerPort, '/b', `b (${mode})`);
    });

    it('converges on a restarted peer without restarting Envoy', async () => {
      const pids = agent.envoyPids();
      await peer.stop();
      peer = await startPeer(service(listenerPort, [{ ...routeA(), port: second.port }]), { address: peerAddress });
      await waitForBody(listenerPort, '/a', `b (${mode})`, 40_000);
      assert.deepEqual(agent.envoyPids(), pids, 'same Envoy, no new epoch');
      const ended = agent.log.find((entry) => entry.msg === 'xDS stream ended' && entry.reason === 'upstream_error');
      assert.ok(ended, 'the relay ended Envoy\'s stream when the peer went away');
    });
  });
}
