import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { startAgent } from '../support/agent.ts';
import { deferStop } from '../support/cleanup.ts';
import { waitUntil } from '../support/poll.ts';
import { startRstDroppingProxy, startScriptedUpstream } from '../support/scripted-upstream.ts';

const grpcOk = { ':status': 200, 'content-type': 'application/grpc' };

describe('xDS relay: a discovery server that ends the call with trailers and no RST_STREAM (real Envoy)', () => {
  it("Envoy's stream is ended and Envoy opens a new one, which reaches the server", async () => {
    await using cleanup = new AsyncDisposableStack();
    let calls = 0;
    // The first call is ended with an OK status once Envoy's first request arrived; later ones stay open.
    const server = await startScriptedUpstream((stream) => {
      const call = ++calls;
      stream.respond(grpcOk, { waitForTrailers: true });
      stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
      if (call === 1) stream.once('data', () => stream.end());
      else stream.resume();
    });
    cleanup.defer(() => server.close());
    const proxy = await startRstDroppingProxy(server.port);
    cleanup.defer(() => proxy.close());
    const agent = await startAgent({ discoveryAddress: `127.0.0.1:${proxy.port}` });
    deferStop(cleanup, agent);

    const ended = await agent.log.waitFor((entry) => entry.msg === 'xDS stream ended', 30_000, "the relay to end Envoy's first stream");
    assert.equal(ended.reason, 'upstream_closed');
    assert.match(String(ended.details), /discovery server ended the stream: OK/);
    await waitUntil('a second call at the server: Envoy reopened its stream through the relay', () => calls >= 2, 30_000);
    assert.ok(agent.log.entries.filter((entry) => entry.msg === 'Envoy opened an xDS stream').length >= 2);
  });
});
