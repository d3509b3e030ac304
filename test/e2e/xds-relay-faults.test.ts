import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { Client, credentials, status } from '@grpc/grpc-js';
import { AdsTestClient, sotwRequest } from '../support/ads-client.ts';
import { suiteCleanup, tempDir, type Cleanup } from '../support/cleanup.ts';
import { startPeer, type Peer } from '../support/peer.ts';
import { plaintextUpstream, startRelay } from '../support/relay.ts';
import { edsCluster } from '../support/resources.ts';
import { frame } from '../../src/grpc/grpc-frame.ts';
import { rawAdsCall, startFreezableProxy, startScriptedUpstream } from '../support/scripted-upstream.ts';
import { within } from '../support/within.ts';
import type { KeepaliveOptions } from '../../src/grpc/keepalive.ts';
import { pollUntil } from '../support/poll.ts';

const clusterType = 'type.googleapis.com/envoy.config.cluster.v3.Cluster';
const grpcOk = { ':status': 200, 'content-type': 'application/grpc' };

/** A response with `resources` resources of `size` bytes each, and a nonce. */
function response(nonce: string, resources = 1, size = 10): Buffer {
  const resource = Buffer.concat([Buffer.from([0x12]), Buffer.from([size]), Buffer.alloc(size, 0x61)]);
  return Buffer.concat([
    Buffer.from([0x0a, 2]),
    Buffer.from('v1'),
    ...Array.from({ length: resources }, () => resource),
    Buffer.from([0x22, clusterType.length]),
    Buffer.from(clusterType),
    Buffer.from([0x2a, nonce.length]),
    Buffer.from(nonce),
  ]);
}

describe('xDS relay faults (scripted discovery server)', () => {
  const suite = suiteCleanup();
  let dir: string;
  before(async () => (dir = await tempDir(suite, 'xds-faults-')));

  it('passes a response on before its last byte has arrived', async () => {
    await using cleanup = new AsyncDisposableStack();
    const body = response('n1', 1000, 100);
    const half = Math.floor(body.length / 2);
    let sendRest: () => void = () => undefined;
    const upstream = await startScriptedUpstream((stream) => {
      stream.respond(grpcOk);
      stream.write(frame(body).subarray(0, 5 + half));
      sendRest = () => stream.write(frame(body).subarray(5 + half));
    });
    cleanup.defer(() => upstream.close());
    const { relay, socketPath } = await startRelayIn(cleanup, dir, plaintextUpstream(upstream.port, dir));
    const { session, stream } = rawAdsCall(socketPath);
    cleanup.defer(() => session.destroy());
    stream.write(frame(sotwRequest({ typeUrl: clusterType, nodeId: 'n' })));
    let received = 0;
    const receivedAtLeast = (bytes: number) => new Promise<void>((resolve) => {
      const check = () => received >= bytes && (stream.off('data', count), resolve());
      const count = (chunk: Buffer) => ((received += chunk.length), check());
      stream.on('data', count);
    });
    // The server sends the rest only once Envoy's side holds the first half.
    await within(
      receivedAtLeast(5 + half),
      10_000,
      `the first ${5 + half} of ${5 + body.length} bytes before the rest is sent (does the relay store and forward?)`,
    );
    const rest = receivedAtLeast(5 + body.length);
    sendRest();
    await within(rest, 10_000, 'the rest of the response');
    await waitFor(() => relay.debug().types[clusterType]?.responses === 1);
    assert.equal(relay.debug().types[clusterType]?.nonce, 'n1');
  });

  const badResponses: [string, (stream: import('node:http2').ServerHttp2Stream) => void, RegExp][] = [
    ['a frame larger than 256 MiB', (stream) => stream.write(Buffer.from([0, 0x10, 0, 0, 1])), /more than the 268435456 allowed/],
    ['a body that is not protobuf', (stream) => stream.write(frame(Buffer.from([0x0a, 0x7f, 0x61]))), /field 1 runs past the end/],
    ['a compressed message', (stream) => stream.write(Buffer.from([1, 0, 0, 0, 1, 0x61])), /compressed message/],
  ];
  for (const [name, send, details] of badResponses) {
    it(`ends Envoy's stream on ${name} from upstream`, async () => {
      await using cleanup = new AsyncDisposableStack();
      const upstream = await startScriptedUpstream((stream) => (stream.respond(grpcOk), send(stream)));
      cleanup.defer(() => upstream.close());
      const { relay, client } = await relayWithClient(cleanup, dir, upstream.port);
      client.send(sotwRequest({ typeUrl: clusterType, nodeId: 'n' }));
      const error = await streamEnd(client);
      assert.equal(error?.code, status.UNAVAILABLE);
      assert.match(String(error?.details), details);
      assert.equal(relay.debug().terminations.bad_upstream_frame, 1);
    });
  }

  it('reports an upstream refusal (Trailers-Only) with its code, and tells Envoy UNAVAILABLE', async () => {
    await using cleanup = new AsyncDisposableStack();
    const upstream = await startScriptedUpstream((stream) =>
      stream.respond({ ...grpcOk, 'grpc-status': '16', 'grpc-message': 'bad%20token' }, { endStream: true }),
    );
    cleanup.defer(() => upstream.close());
    const { registry, client } = await relayWithClient(cleanup, dir, upstream.port);
    client.send(sotwRequest({ typeUrl: clusterType, nodeId: 'n' }));
    const error = await streamEnd(client);
    assert.equal(error?.code, status.UNAVAILABLE);
    assert.match(String(error?.details), /UNAUTHENTICATED bad token/);
    assert.match(await registry.metrics(), /istio_agent_xds_proxy_upstream_failures_total\{code="UNAUTHENTICATED"\} 1/);
  });
});

describe('xDS relay faults from Envoy\'s side (real peer)', () => {
  const suite = suiteCleanup();
  let dir: string;
  let peer: Peer;
  before(async () => {
    dir = await tempDir(suite, 'xds-faults-');
    peer = await startPeer([edsCluster('c1')]);
    suite.defer(() => peer.stop());
  });

  it('refuses a request over 16 MiB with RESOURCE_EXHAUSTED', async () => {
    await using cleanup = new AsyncDisposableStack();
    const { relay, client } = await relayWithClient(cleanup, dir, peer.port);
    client.send(Buffer.alloc(17 * 1024 * 1024));
    const error = await streamEnd(client);
    assert.equal(error?.code, status.RESOURCE_EXHAUSTED);
    assert.equal(relay.debug().terminations.bad_envoy_frame, 1);
  });

  it('answers an unknown method with UNIMPLEMENTED', async () => {
    await using cleanup = new AsyncDisposableStack();
    const { target } = await startRelayIn(cleanup, dir, plaintextUpstream(peer.port, dir));
    const client = new Client(target, credentials.createInsecure());
    cleanup.defer(() => client.close());
    const identity = (message: Buffer) => message;
    const call = new Promise<{ code: number } | null>((resolve) =>
      client.makeUnaryRequest('/no.Such/Method', identity, identity, Buffer.alloc(0), (failure) => resolve(failure)),
    );
    assert.equal((await within(call, 10_000, 'the answer to an unknown method'))?.code, status.UNIMPLEMENTED);
  });

  it('notices a discovery server that stopped answering (keepalive) and ends the stream', async () => {
    await using cleanup = new AsyncDisposableStack();
    const proxy = await startFreezableProxy(peer.port);
    cleanup.defer(() => proxy.close());
    const { relay, client } = await relayWithClient(cleanup, dir, proxy.port, { intervalMs: 100, timeoutMs: 300 });
    client.send(sotwRequest({ typeUrl: clusterType, nodeId: 'n' }));
    await client.waitForResponses(1);
    proxy.freeze();
    const error = await streamEnd(client);
    assert.equal(error?.code, status.UNAVAILABLE);
    assert.match(String(error?.details), /keepalive/);
    assert.equal(relay.debug().terminations.upstream_error, 1);
  });
});

/** The in-process relay, stopped with `cleanup`. */
async function startRelayIn(cleanup: Cleanup, ...args: Parameters<typeof startRelay>) {
  const started = await startRelay(...args);
  cleanup.defer(() => started.relay.stop());
  return started;
}

/** A relay to a plaintext discovery server on `port`, and an ADS client of it; both end with `cleanup`. */
async function relayWithClient(cleanup: Cleanup, dir: string, port: number, keepalive?: KeepaliveOptions) {
  const started = await startRelayIn(cleanup, dir, plaintextUpstream(port, dir), keepalive);
  const client = new AdsTestClient(started.target);
  cleanup.defer(() => client.close());
  return { ...started, client };
}

/** How Envoy's stream ended, bounded: a relay that never ends it fails here with a reason. */
function streamEnd(client: AdsTestClient) {
  return within(client.ended, 15_000, "the relay to end Envoy's stream");
}

/** Polls a condition the relay reaches asynchronously, bounded. */
async function waitFor(condition: () => boolean, timeoutMs = 5_000): Promise<void> {
  await pollUntil(condition, { what: condition.toString(), timeoutMs, intervalMs: 10 });
}
