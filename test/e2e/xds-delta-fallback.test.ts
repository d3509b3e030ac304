/**
 * Delta xDS by default, as Istio's agent since 1.22; a discovery server
 * without Delta (Istio 1.1's Pilot) answers it UNIMPLEMENTED, and the agent
 * falls back to State of the World by itself: one line, one new epoch with
 * a SotW bootstrap, and it stays there, unless SotW is answered UNIMPLEMENTED
 * in turn: then back to Delta.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { deferStop, suiteCleanup } from '../support/cleanup.ts';
import { startAgent, type RunningAgent } from '../support/agent.ts';
import { startPeer, type Peer } from '../support/peer.ts';
import { freePort } from '../support/ports.ts';
import { simpleHttpService } from '../support/resources.ts';
import { startUpstream } from '../support/upstream.ts';
import { epochLive } from '../support/tls-rig.ts';
import { pollUntil } from '../support/poll.ts';

const fallbackLine = 'the discovery server does not implement Delta xDS (UNIMPLEMENTED): restarting Envoy with State of the World xDS';
const backLine = 'the discovery server does not implement State of the World xDS (UNIMPLEMENTED): restarting Envoy with Delta xDS';

/** Envoy's answer on the configured listener, once it has one. */
async function getThrough(port: number): Promise<string> {
  const response = await pollUntil(() => fetch(`http://127.0.0.1:${port}/`, { signal: AbortSignal.timeout(2000) }), {
    what: `a 200 through Envoy on port ${port}`, timeoutMs: 30_000, accept: (answer) => answer.status === 200, show: (answer) => String(answer.status),
  });
  return response.text();
}

const adsApiType = async (dir: string, epoch: number) =>
  (JSON.parse(await readFile(join(dir, 'config', `envoy-rev${epoch}.json`), 'utf8')) as { dynamic_resources: { ads_config: { api_type: string } } })
    .dynamic_resources.ads_config.api_type;

describe('Delta xDS by default, State of the World with a server without Delta', () => {
  it('a default agent speaks Delta to a server that has it: a Delta stream, no fallback', { timeout: 90_000 }, async () => {
    await using cleanup = new AsyncDisposableStack();
    const upstream = await startUpstream('hello (delta)');
    cleanup.defer(() => upstream.close());
    const listenerPort = await freePort();
    const peer = await startPeer(simpleHttpService({ listenerPort, upstreamPort: upstream.port }));
    cleanup.defer(() => peer.stop());
    const agent = await startAgent({ discoveryAddress: peer.address });
    deferStop(cleanup, agent);
    assert.equal(await getThrough(listenerPort), 'hello (delta)');
    assert.equal(await adsApiType(agent.dir, 0), 'DELTA_GRPC');
    assert.ok(peer.log.entries.some((entry) => entry.event === 'stream_open' && entry.type === 'delta'));
    assert.equal(agent.log.find((entry) => entry.msg === fallbackLine), undefined);
  });

  describe('an agent against a server without Delta', { timeout: 90_000 }, () => {
    const cleanup = suiteCleanup();
    let agent: RunningAgent;
    let peer: Peer;
    let served: string;

    before(async () => {
      const upstream = await startUpstream('hello (sotw)');
      cleanup.defer(() => upstream.close());
      const listenerPort = await freePort();
      peer = await startPeer(simpleHttpService({ listenerPort, upstreamPort: upstream.port }), { args: ['--no-delta'] });
      cleanup.defer(() => peer.stop());
      agent = await startAgent({ discoveryAddress: peer.address });
      deferStop(cleanup, agent);
      await agent.log.waitFor((entry) => entry.msg === fallbackLine, 30_000, 'the fallback line');
      served = await getThrough(listenerPort);
      // Epoch 0 never got config, so it is replaced (a cold start of a new epoch 0), not hot-restarted from.
      await epochLive(agent, 0);
    });

    it('falls back with one line to a SotW Envoy that gets config and serves', async () => {
      assert.equal(served, 'hello (sotw)');
      assert.equal(await adsApiType(agent.dir, 0), 'GRPC');
      assert.ok(peer.log.entries.some((entry) => entry.event === 'delta_refused'));
      assert.ok(peer.log.entries.some((entry) => entry.event === 'stream_open' && entry.type === 'sotw'));
      assert.equal(agent.log.entries.filter((entry) => entry.msg === fallbackLine).length, 1);
    });

    it('stays on SotW: one restart, no more, and no warning', () => {
      assert.equal(agent.log.entries.filter((entry) => entry.msg === 'envoy started').length, 2, 'one restart, no more');
      // The agent's own lines (Envoy's "caught ENVOY_SIGTERM" on the replaced epoch is Envoy's; this rig mounts no certificates).
      const warnings = agent.log.entries.filter((entry) => Number(entry.level) >= 40 && entry.component !== 'envoy' && entry.component !== 'certs');
      // The whole lines in the message: a warning seen once under load must say its reason and details.
      assert.deepEqual(warnings.map((entry) => entry.msg), [], `an old Pilot is a working world: no warning; got ${JSON.stringify(warnings)}`);
    });
  });

  it('an agent fallen back to SotW whose server then has Delta only goes back to Delta: a new epoch takes over and serves', { timeout: 150_000 }, async () => {
    await using cleanup = new AsyncDisposableStack();
    const upstream = await startUpstream('hello (delta again)');
    cleanup.defer(() => upstream.close());
    const listenerPort = await freePort();
    const resources = simpleHttpService({ listenerPort, upstreamPort: upstream.port });
    let peer = await startPeer(resources, { args: ['--no-delta'] });
    const address = peer.address;
    cleanup.defer(() => peer.stop());
    const agent = await startAgent({ discoveryAddress: address });
    deferStop(cleanup, agent);
    await agent.log.waitFor((entry) => entry.msg === fallbackLine, 30_000, 'the fallback to SotW');
    await epochLive(agent, 0);
    assert.equal(await adsApiType(agent.dir, 0), 'GRPC');
    // The server behind the address now has Delta only: the SotW stream is answered UNIMPLEMENTED.
    await peer.stop();
    peer = await startPeer(resources, { args: ['--no-sotw'], address });
    await agent.log.waitFor((entry) => entry.msg === backLine, 60_000, 'the switch back to Delta');
    await epochLive(agent, 1, 60_000);
    assert.equal(await adsApiType(agent.dir, 1), 'DELTA_GRPC');
    assert.ok(peer.log.entries.some((entry) => entry.event === 'sotw_refused'));
    assert.ok(peer.log.entries.some((entry) => entry.event === 'stream_open' && entry.type === 'delta'));
    assert.equal(await getThrough(listenerPort), 'hello (delta again)');
  });
});
