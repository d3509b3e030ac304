import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { assertGone, startAgent } from '../support/agent.ts';
import { startPeer, type Peer } from '../support/peer.ts';
import { freePort } from '../support/ports.ts';
import { edsCluster, endpoints, httpListener, routeConfig, simpleHttpService } from '../support/resources.ts';
import { startUpstream, type Upstream } from '../support/upstream.ts';
import { get, startStatusAgent, waitForStatus } from '../support/status-agent.ts';

describe('status server readiness with the real Envoy', () => {
  let upstream: Upstream;

  before(async () => {
    upstream = await startUpstream('hello');
  });
  after(() => upstream.close());

  it('answers 503 "not received" until the discovery server sends config, then 200, also through Envoy', async () => {
    const discoveryPort = await freePort();
    const { agent, statusPort, readinessPort } = await startStatusAgent(`127.0.0.1:${discoveryPort}`);
    let peer: Peer | undefined;
    try {
      const notReceived = await waitForStatus(statusPort, '/healthz/ready', (response) => response.status === 503 && /config not received/.test(response.body));
      assert.match(notReceived.body, /cds updates: 0 successful/);
      peer = await startPeer(simpleHttpService({ listenerPort: await freePort(), upstreamPort: upstream.port }), { address: `127.0.0.1:${discoveryPort}` });
      await waitForStatus(statusPort, '/healthz/ready', (response) => response.status === 200, 30_000);
      const viaEnvoy = await waitForStatus(readinessPort, '/healthz/ready', (response) => response.status === 200);
      assert.equal(viaEnvoy.body, 'ready\n');
      assert.equal((await get(readinessPort, '/stats/prometheus')).status, 404, 'Envoy routes only /healthz/ready to the agent');
    } finally {
      assert.equal((await agent.stop()).exitCode, 0, agent.stderr());
      await assertGone(agent.envoyPids());
      await peer?.stop();
    }
  });

  it('turns 503 once Envoy is killed, saying no epoch is LIVE, and 200 again after the restart', async () => {
    const peer = await startPeer(simpleHttpService({ listenerPort: await freePort(), upstreamPort: upstream.port }));
    // The restart waits 10 s, so the answer in between is read, not raced.
    const { agent, statusPort } = await startStatusAgent(peer.address, ['--retryInitialDelay', '10s']);
    try {
      await waitForStatus(statusPort, '/healthz/ready', (response) => response.status === 200, 30_000);
      const live = await agent.log.waitFor((entry) => entry.msg === 'epoch live', 5000, 'epoch 0 LIVE in the agent\'s eyes');
      assert.match(String(live.envoyVersion), /\/1\.40\./, 'the line says which Envoy went LIVE (from /server_info)');
      const [envoy] = agent.envoyPids();
      process.kill(envoy!, 'SIGKILL');
      const dead = await waitForStatus(statusPort, '/healthz/ready', (response) => response.status !== 200, 8000);
      assert.equal(dead.status, 503);
      assert.match(dead.body, /no Envoy epoch is LIVE \(no Envoy running; epoch 0 ended failed: .*SIGKILL/);
      assert.equal(agent.envoyPids().length, 1, 'read before the restart');
      await waitForStatus(statusPort, '/healthz/ready', (response) => response.status === 200, 30_000);
      assert.equal(agent.envoyPids().length, 2, 'ready again with the restarted Envoy');
    } finally {
      assert.equal((await agent.stop()).exitCode, 0, agent.stderr());
      await assertGone(agent.envoyPids());
      await peer.stop();
    }
  });

  it('says the config was rejected when Envoy NACKs the listeners', async () => {
    const badListener = {
      ...(httpListener('listener_bad', 1, 'local_route') as Record<string, unknown>),
      address: { socket_address: { address: '127.0.0.1', port_value: 70000 } },
    };
    const peer = await startPeer([
      badListener,
      routeConfig('local_route', [{ prefix: '/', cluster: 'upstream' }]),
      edsCluster('upstream'),
      endpoints('upstream', upstream.port),
    ]);
    const { agent, statusPort } = await startStatusAgent(peer.address);
    try {
      // Not just /rejected/: the counts ("0 rejected") say it while LDS is still on its way.
      const verdict = /config received from the discovery server but rejected/;
      const rejected = await waitForStatus(statusPort, '/healthz/ready', (response) => verdict.test(response.body), 30_000);
      assert.equal(rejected.status, 503);
      assert.match(rejected.body, /lds updates: 0 successful, [1-9]\d* rejected/);
      await peer.log.waitFor((entry) => entry.event === 'request' && Boolean(entry.error), 5000, 'the NACK at the peer');
    } finally {
      assert.equal((await agent.stop()).exitCode, 0, agent.stderr());
      await assertGone(agent.envoyPids());
      await peer.stop();
    }
  });

  it('--statusPort 0 turns the status server off, and Envoy gets no readiness listener even with --readinessPort set', async () => {
    const peer = await startPeer([]);
    const readinessPort = await freePort();
    // startAgent passes --statusPort 0 already; said again here because it is what this test is about.
    const agent = await startAgent({ discoveryAddress: peer.address, args: ['--statusPort', '0', '--readinessPort', String(readinessPort)] });
    try {
      const line = await agent.log.waitFor((entry) => entry.msg === 'pilot-agent starting');
      assert.equal((line.ports as { status: number }).status, 0);
      // Envoy itself: its admin lists its listeners; none may hold the readiness port.
      const listeners = await waitForStatus(agent.adminPort, '/listeners?format=json', (response) => response.status === 200, 30_000);
      assert.doesNotMatch(listeners.body, new RegExp(`"port_value":\\s*${readinessPort}\\b`), listeners.body);
      assert.equal((await get(readinessPort, '/healthz/ready')).status, 0, 'nothing listens on --readinessPort');
      assert.equal(agent.log.find((entry) => entry.msg === 'status server listening'), undefined);
    } finally {
      await agent.stop();
      await assertGone(agent.envoyPids());
      await peer.stop();
    }
  });
});
