import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { assertGone, startAgent } from '../support/agent.ts';
import { suiteCleanup } from '../support/cleanup.ts';
import { startPeer, type Peer } from '../support/peer.ts';
import { freePort } from '../support/ports.ts';
import { simpleHttpService } from '../support/resources.ts';
import { startUpstream, type Upstream } from '../support/upstream.ts';

/** Retries a GET until it answers 200 or the wait runs out. */
async function getThrough(port: number, timeoutMs = 15_000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < deadline) {
    const response = await fetch(`http://127.0.0.1:${port}/hello`).catch((error: Error) => error);
    if (!(response instanceof Error) && response.status === 200) return response.text();
    last = response instanceof Error ? String(response.cause ?? response) : `HTTP ${response.status}`;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`no 200 through Envoy on port ${port}; last: ${last}`);
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
