import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { startAgent } from '../support/agent.ts';
import { deferStop } from '../support/cleanup.ts';
import { waitUntil } from '../support/poll.ts';
import { startTrailersEndingServer } from '../support/scripted-upstream.ts';

describe('xDS relay: a discovery server that ends the call with trailers and no RST_STREAM (real Envoy)', () => {
  it("Envoy's stream is ended and Envoy opens a new one, which reaches the server", async () => {
    await using cleanup = new AsyncDisposableStack();
    const server = await startTrailersEndingServer(cleanup);
    const agent = await startAgent({ discoveryAddress: `127.0.0.1:${server.port}` });
    deferStop(cleanup, agent);

    const ended = await agent.log.waitFor((entry) => entry.msg === 'xDS stream ended', 30_000, "the relay to end Envoy's first stream");
    assert.equal(ended.reason, 'upstream_closed');
    assert.match(String(ended.details), /discovery server ended the stream: OK/);
    await waitUntil('a second call at the server: Envoy reopened its stream through the relay', () => server.calls() >= 2, 30_000);
    assert.ok(agent.log.entries.filter((entry) => entry.msg === 'Envoy opened an xDS stream').length >= 2);
  });
});
