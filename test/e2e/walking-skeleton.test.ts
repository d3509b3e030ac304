import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { assertGone, startAgent } from '../support/agent.ts';
import { suiteCleanup } from '../support/cleanup.ts';
import { startPeer, type Peer } from '../support/peer.ts';
import { freePort } from '../support/ports.ts';
import { simpleHttpService } from '../support/resources.ts';
import { startUpstream, type Upstream } from '../support/upstream.ts';
import { pollUntil } from '../support/poll.ts';

/** Retries a GET until it answers 200 or the wait runs out. */
async function getThrough(port: number, timeoutMs = 15_000): Promise<string> {
  const response = await pollUntil(() => fetch(`http://127.0.0.1:${port}/hello`), {
    what: `a 200 through Envoy on port ${port}`, timeoutMs, accept: (answer) => answer.status === 200, show: (answer) => `HTTP ${answer.status}`,
  });
  return response.text();
}

for (const mode of ['sotw', 'delta'] as const) {
  describe(`agent + real Envoy + go-control-plane peer (${mode})`, () => {
    let upstream: Upstream;
    let peer: Peer;
    let listenerPort: number;

    const cleanup = suiteCleanup();

    before(async () => {
      upstream = await startUpstream(`hello from upstream (${mode})`);
      cleanup.defer(() => upstream.close());
      listenerPort = await freePort();
      peer = await startPeer(simpleHttpService({ listenerPort, upstreamPort: upstream.port }));
      cleanup.defer(() => peer.stop());
    });

    it('serves traffic configured over xDS and leaves no Envoy behind', async () => {
      const agent = await startAgent({ discoveryAddress: peer.address, args: mode === 'sotw' ? ['--deltaXds=false'] : [] });
      try {
        assert.equal(await getThrough(listenerPort), `hello from upstream (${mode})`);
        const streams = peer.log.entries.filter((entry) => entry.event === 'stream_open');
        assert.ok(streams.some((entry) => entry.type === mode), `peer saw a ${mode} stream`);
        const request = peer.log.find((entry) => entry.event === 'request' && Boolean(entry.node));
        assert.equal(request?.node, 'sidecar~127.0.0.1~127.0.0.1~');
      } finally {
        const result = await agent.stop('SIGTERM');
        assert.equal(result.exitCode, 0, agent.stderr());
        assert.ok(agent.envoyPids().length >= 1);
        await assertGone(agent.envoyPids());
      }
    });
  });
}
