import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { startAgent, type RunningAgent } from '../support/agent.ts';
import { deferStop, suiteCleanup } from '../support/cleanup.ts';
import { startPeer, type Peer } from '../support/peer.ts';
import { freePort } from '../support/ports.ts';
import { edsCluster } from '../support/resources.ts';
import { startUpstream, type Upstream } from '../support/upstream.ts';
import { get as getStatus } from '../support/status-agent.ts';
import { configDump, envoyStarted, failures, routedService, waitForBody } from '../support/routed-service.ts';

const lkgLine = 'serving last-known-good config: the discovery server cannot be reached';

for (const mode of ['sotw', 'delta'] as const) {
  describe(`last-known-good xDS: a restarted Envoy during an outage (${mode})`, () => {
    let first: Upstream;
    let second: Upstream;
    let peer: Peer | undefined;
    let peerAddress: string;
    let listenerPort: number;
    let agent: RunningAgent;
    let statusPort: number;
    const route = (port: number) => ({ prefix: '/', cluster: 'cluster_a', port });

    const cleanup = suiteCleanup();

    before(async () => {
      first = await startUpstream(`a (${mode})`);
      cleanup.defer(() => first.close());
      second = await startUpstream(`b (${mode})`);
      cleanup.defer(() => second.close());
      listenerPort = await freePort();
      peerAddress = `127.0.0.1:${await freePort()}`;
      peer = await startPeer(routedService(listenerPort, [route(first.port)]), { address: peerAddress });
      // The tests stop and restart the peer: stop the current one.
      cleanup.defer(async () => {
        await peer?.stop();
      });
      statusPort = await freePort();
      agent = await startAgent({
        discoveryAddress: peerAddress,
        args: ['--statusPort', String(statusPort), ...(mode === 'delta' ? ['--deltaXds'] : ['--deltaXds=false'])],
      });
      deferStop(cleanup, agent, (result) => assert.equal(result.exitCode, 0, agent.stderr()));
    });

    it('a NACKed response is not kept: the replay below carries the accepted config only', async () => {
      await waitForBody(listenerPort, '/', `a (${mode})`);
      const invalid = { ...(edsCluster('cluster_bad') as object), connect_timeout: '-1s' };
      await peer!.setResources(routedService(listenerPort, [route(first.port)], [invalid]));
      await agent.log.waitFor((entry) => entry.msg === 'Envoy rejected a response (NACK)', 20_000, 'the NACK');
    });

    it('kill -9 Envoy with the peer stopped: the new Envoy gets the kept config and serves, no request fails after', async () => {
      await peer!.stop();
      peer = undefined;
      const from = agent.log.entries.length;
      process.kill(await envoyStarted(agent, 0), 'SIGKILL');
      await envoyStarted(agent, 1);
      await waitForBody(listenerPort, '/', `a (${mode})`);
      assert.deepEqual(await failures(listenerPort, '/', `a (${mode})`, 50), []);
      const served = await agent.log.waitFor((entry) => entry.msg === lkgLine, 1000, 'the last-known-good log line', from);
      assert.equal(served.mode, mode);
      const dump = await configDump(agent);
      assert.doesNotMatch(dump, /cluster_bad/, 'the NACKed cluster is never replayed');
      assert.match(dump, /"cluster_a"/);
      assert.equal(agent.log.entries.slice(from).some((entry) => entry.msg === 'Envoy rejected a last-known-good response (NACK)'), false);
    });

    it('readiness, /debug/xds and the metrics say since when the config is the kept one', async () => {
      const ready = await getStatus(statusPort, '/healthz/ready');
      assert.equal(ready.status, 200, ready.body);
      const since = /serving last-known-good config since (\S+):/.exec(ready.body)?.[1];
      assert.ok(since && !Number.isNaN(Date.parse(since)), ready.body);
      const debug = JSON.parse((await getStatus(statusPort, '/debug/xds')).body) as { servingLastKnownGoodSince?: string; streams: { upstream: string }[] };
      assert.equal(debug.servingLastKnownGoodSince, since);
      assert.ok(debug.streams.some((stream) => stream.upstream === 'last-known-good'));
      const metrics = (await getStatus(statusPort, '/stats/prometheus')).body;
      assert.match(metrics, new RegExp(`^istio_agent_xds_last_known_good_since_seconds ${Date.parse(since) / 1000}$`, 'm'));
      assert.match(metrics, /^istio_agent_xds_last_known_good_streams 1$/m);
    });

    it('the peer back with a changed config: the stream is handed over on the redial\'s own connection, and the change reaches Envoy', async () => {
      const from = agent.log.entries.length;
      peer = await startPeer(routedService(listenerPort, [route(second.port)]), { address: peerAddress });
      await waitForBody(listenerPort, '/', `b (${mode})`, 60_000);
      assert.ok(agent.log.find((entry) => entry.msg === 'the discovery server answers again; handing the stream over'));
      const connected = agent.log.entries.slice(from).filter((entry) => entry.msg === 'connected to the discovery server');
      assert.equal(connected.length, 1, 'one connection per reconnect: the dial that reached the server carries the stream');
      const ready = await getStatus(statusPort, '/healthz/ready');
      assert.equal(ready.body, 'ready\n');
    });
  });
}
