import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client, credentials, status } from '@grpc/grpc-js';
import { AdsTestClient, sotwRequest } from '../support/ads-client.ts';
import { startPeer, type Peer } from '../support/peer.ts';
import { plaintextUpstream, startRelay } from '../support/relay.ts';
import { edsCluster } from '../support/resources.ts';
import { frame } from '../../src/xds/grpc-frame.ts';
import { rawAdsCall, startFreezableProxy, startScriptedUpstream } from '../support/scripted-upstream.ts';

const clusterType = 'type.googleapis.com/envoy.config.cluster.v3.Cluster';
const grpcOk = { ':status': 200, 'content-type': 'application/grpc' };

/** A response with `resources` resources of `size` bytes each, and a nonce. */
function response(nonce: string, resources = 1, size = 10): Buffer {
  const resource = Buffer.concat([Buffer.from([0x12]), Buffer.from([size]), Buffer.alloc(size, 0x61)]);
  return Buffer.concat([Buffer.from([0x0a, 2]), Buffer.from('v1'), ...Array.from({ length: resources }, () => resource), Buffer.from([0x22, clusterType.length]), Buffer.from(clusterType), Buffer.from([0x2a, nonce.length]), Buffer.from(nonce)]);
}

describe('xDS relay faults (scripted discovery server)', () => {
  let dir: string;
  before(async () => (dir = await mkdtemp(join(tmpdir(), 'xds-faults-'))));
  after(() => rm(dir, { recursive: true, force: true }));

  it('passes a response on before its last byte has arrived', async () => {
    const body = response('n1', 1000, 100);
    const half = Math.floor(body.length / 2);
    let sendRest: () => void = () => undefined;
    const upstream = await startScriptedUpstream((stream) => {
      stream.respond(grpcOk);
      stream.write(frame(body).subarray(0, 5 + half));
      sendRest = () => stream.write(frame(body).subarray(5 + half));
    });
    const { relay, socketPath } = await startRelay(dir, plaintextUpstream(upstream.port, dir));
    const { session, stream } = rawAdsCall(socketPath);
    try {
      stream.write(frame(sotwRequest({ typeUrl: clusterType, nodeId: 'n' })));
      let received = 0;
      // Only when Envoy's side holds the first half does the server send the rest: store-and-forward would hang here.
      await new Promise<void>((resolve) => stream.on('data', (chunk: Buffer) => (received += chunk.length) >= 5 + half && resolve()));
      sendRest();
      await new Promise<void>((resolve) => stream.on('data', () => received === 5 + body.length && resolve()));
      await waitFor(() => relay.debug().types[clusterType]?.responses === 1);
      assert.equal(relay.debug().types[clusterType]?.nonce, 'n1');
    } finally {
      session.destroy();
      await relay.stop();
      await upstream.close();
    }
  });

  const badResponses: [string, (stream: import('node:http2').ServerHttp2Stream) => void, RegExp][] = [
    ['a frame larger than 256 MiB', (stream) => stream.write(Buffer.from([0, 0x10, 0, 0, 1])), /more than the 268435456 allowed/],
    ['a body that is not protobuf', (stream) => stream.write(frame(Buffer.from([0x0a, 0x7f, 0x61]))), /field 1 runs past the end/],
    ['a compressed message', (stream) => stream.write(Buffer.from([1, 0, 0, 0, 1, 0x61])), /compressed message/],
  ];
  for (const [name, send, details] of badResponses) {
    it(`ends Envoy's stream on ${name} from upstream`, async () => {
      const upstream = await startScriptedUpstream((stream) => (stream.respond(grpcOk), send(stream)));
      const { relay, target } = await startRelay(dir, plaintextUpstream(upstream.port, dir));
      const client = new AdsTestClient(target);
      try {
        client.send(sotwRequest({ typeUrl: clusterType, nodeId: 'n' }));
        const error = await client.ended;
        assert.equal(error?.code, status.UNAVAILABLE);
        assert.match(String(error?.details), details);
        assert.equal(relay.debug().terminations.bad_upstream_frame, 1);
      } finally {
        client.close();
        await relay.stop();
        await upstream.close();
      }
    });
  }

  it('reports an upstream refusal (Trailers-Only) with its code, and tells Envoy UNAVAILABLE', async () => {
    const upstream = await startScriptedUpstream((stream) => stream.respond({ ...grpcOk, 'grpc-status': '16', 'grpc-message': 'bad%20token' }, { endStream: true }));
    const { relay, registry, target } = await startRelay(dir, plaintextUpstream(upstream.port, dir));
    const client = new AdsTestClient(target);
    try {
      client.send(sotwRequest({ typeUrl: clusterType, nodeId: 'n' }));
      const error = await client.ended;
      assert.equal(error?.code, status.UNAVAILABLE);
      assert.match(String(error?.details), /UNAUTHENTICATED bad token/);
      assert.match(await registry.metrics(), /pilot_agent_xds_proxy_upstream_failures_total\{code="UNAUTHENTICATED"\} 1/);
    } finally {
      client.close();
      await relay.stop();
      await upstream.close();
    }
  });
});

describe('xDS relay faults from Envoy\'s side (real peer)', () => {
  let dir: string;
  let peer: Peer;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'xds-faults-'));
    peer = await startPeer([edsCluster('c1')]);
  });
  after(async () => {
    await peer.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('refuses a request over 16 MiB with RESOURCE_EXHAUSTED', async () => {
    const { relay, target } = await startRelay(dir, plaintextUpstream(peer.port, dir));
    const client = new AdsTestClient(target);
    try {
      client.send(Buffer.alloc(17 * 1024 * 1024));
      const error = await client.ended;
      assert.equal(error?.code, status.RESOURCE_EXHAUSTED);
      assert.equal(relay.debug().terminations.bad_envoy_frame, 1);
    } finally {
      client.close();
      await relay.stop();
    }
  });

  it('answers an unknown method with UNIMPLEMENTED', async () => {
    const { relay, target } = await startRelay(dir, plaintextUpstream(peer.port, dir));
    const client = new Client(target, credentials.createInsecure());
    try {
      const identity = (message: Buffer) => message;
      const error = await new Promise<{ code: number } | null>((resolve) => client.makeUnaryRequest('/no.Such/Method', identity, identity, Buffer.alloc(0), (failure) => resolve(failure)));
      assert.equal(error?.code, status.UNIMPLEMENTED);
    } finally {
      client.close();
      await relay.stop();
    }
  });

  it('notices a discovery server that stopped answering (keepalive) and ends the stream', async () => {
    const proxy = await startFreezableProxy(peer.port);
    const { relay, target } = await startRelay(dir, plaintextUpstream(proxy.port, dir), { intervalMs: 100, timeoutMs: 300 });
    const client = new AdsTestClient(target);
    try {
      client.send(sotwRequest({ typeUrl: clusterType, nodeId: 'n' }));
      await client.waitForResponses(1);
      proxy.freeze();
      const error = await client.ended;
      assert.equal(error?.code, status.UNAVAILABLE);
      assert.match(String(error?.details), /keepalive/);
      assert.equal(relay.debug().terminations.upstream_error, 1);
    } finally {
      client.close();
      await relay.stop();
      await proxy.close();
    }
  });
});

/** Polls a condition the relay reaches asynchronously, bounded. */
async function waitFor(condition: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
