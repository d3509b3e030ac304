import assert from 'node:assert/strict';
import { connect as connectHttp2, type ClientHttp2Session } from 'node:http2';
import { connect as connectSocket, type Socket } from 'node:net';
import { before, describe, it } from 'node:test';
import { frame } from '../../src/grpc/grpc-frame.ts';
import { adsMethods, maxStreamsPerConnection, xdsConnectionLimits } from '../../src/xds/relay/relay.ts';
import { sotwRequest } from '../support/ads-client.ts';
import { suiteCleanup, tempDir } from '../support/cleanup.ts';
import { plaintextUpstream, startRelay } from '../support/relay.ts';
import { startScriptedUpstream } from '../support/scripted-upstream.ts';
import { pollUntil } from '../support/poll.ts';

describe('the XDS socket bounds what one client can make the relay hold', () => {
  let dir: string;
  let upstream: Awaited<ReturnType<typeof startScriptedUpstream>>;
  let upstreamStreams = 0;

  const cleanup = suiteCleanup();

  before(async () => {
    dir = await tempDir(cleanup, 'xds-bounds-');
    // Answers headers and then holds every stream open, as a quiet discovery server does.
    upstream = await startScriptedUpstream((stream) => (upstreamStreams++, stream.respond({ ':status': 200, 'content-type': 'application/grpc' })));
    cleanup.defer(() => upstream.close());
  });

  it(`holds at most ${maxStreamsPerConnection} streams open per connection`, async () => {
    const { relay, socketPath } = await startRelay(dir, plaintextUpstream(upstream.port, dir));
    const session = connectHttp2('http://localhost', { createConnection: () => connectSocket(socketPath) });
    session.on('error', () => undefined);
    try {
      await new Promise((resolve) => session.once('remoteSettings', resolve));
      assert.equal(session.remoteSettings.maxConcurrentStreams, maxStreamsPerConnection);
      for (let i = 0; i < maxStreamsPerConnection + 8; i++) {
        const stream = session.request({ ':method': 'POST', ':path': adsMethods.sotw, 'content-type': 'application/grpc', te: 'trailers' });
        stream.on('error', () => undefined);
        stream.write(frame(sotwRequest({ typeUrl: 'type.googleapis.com/envoy.config.cluster.v3.Cluster', nodeId: `n${i}` })));
      }
      await waitUntil(() => upstreamStreams >= maxStreamsPerConnection);
      // Every request has had time to be written: one more round trip on the session.
      await new Promise((resolve) => session.ping(resolve));
      assert.equal(relay.debug().streams.length, maxStreamsPerConnection, JSON.stringify(relay.debug().terminations));
      assert.equal(upstreamStreams, maxStreamsPerConnection);
    } finally {
      session.destroy();
      await relay.stop();
    }
  });

  describe('a flood of 200 idle connections while Envoy\'s ADS session holds a stream', () => {
    const floodCleanup = suiteCleanup();
    let relay: Awaited<ReturnType<typeof startRelay>>['relay'];
    let ads: ClientHttp2Session;
    let closed = 0;

    before(async () => {
      let socketPath: string;
      ({ relay, socketPath } = await startRelay(dir, plaintextUpstream(upstream.port, dir)));
      floodCleanup.defer(() => relay.stop());
      ads = connectHttp2('http://localhost', { createConnection: () => connectSocket(socketPath) });
      ads.on('error', () => undefined);
      floodCleanup.defer(() => void ads.destroy());
      const idle: Socket[] = [];
      floodCleanup.defer(() => idle.forEach((socket) => socket.destroy()));
      await new Promise((resolve) => ads.once('remoteSettings', resolve));
      const stream = ads.request({ ':method': 'POST', ':path': adsMethods.sotw, 'content-type': 'application/grpc', te: 'trailers' });
      stream.on('error', () => undefined);
      stream.write(frame(sotwRequest({ typeUrl: 'type.googleapis.com/envoy.config.cluster.v3.Cluster', nodeId: 'envoy' })));
      await waitUntil(() => relay.debug().streams.length === 1);
      for (let i = 0; i < 200; i++) {
        const socket = connectSocket(socketPath);
        socket.on('error', () => undefined).on('close', () => closed++).resume();
        idle.push(socket);
      }
      await waitUntil(() => closed >= 200 - (xdsConnectionLimits.max - 1)).catch((error: Error) => { throw new Error(`${error.message}: ${closed} closed`); });
      // One more round trip on the ADS session: it is still there, its stream open.
      await new Promise((resolve, reject) => ads.ping((error) => (error ? reject(error) : resolve(undefined))));
    });

    it(`holds at most ${xdsConnectionLimits.max} connections, closing the idle ones beyond the cap`, () => {
      assert.equal(closed, 200 - (xdsConnectionLimits.max - 1), 'the idle ones beyond the cap were closed');
    });

    it('never sheds the connection with a stream (Envoy\'s ADS)', () => {
      assert.equal(ads.destroyed || ads.closed, false);
      assert.equal(relay.debug().streams.length, 1, 'the stream with work survives the flood');
    });
  });

  describe('a stream asking for 500 made-up xDS types and one known type', () => {
    const typesCleanup = suiteCleanup();
    let relay: Awaited<ReturnType<typeof startRelay>>['relay'];
    let registry: Awaited<ReturnType<typeof startRelay>>['registry'];

    before(async () => {
      let socketPath: string;
      ({ relay, registry, socketPath } = await startRelay(dir, plaintextUpstream(upstream.port, dir)));
      typesCleanup.defer(() => relay.stop());
      const session = connectHttp2('http://localhost', { createConnection: () => connectSocket(socketPath) });
      session.on('error', () => undefined);
      typesCleanup.defer(() => void session.destroy());
      const stream = session.request({ ':method': 'POST', ':path': adsMethods.sotw, 'content-type': 'application/grpc', te: 'trailers' });
      stream.on('error', () => undefined);
      for (let i = 0; i < 500; i++) stream.write(frame(sotwRequest({ typeUrl: `type.googleapis.com/bogus.Type${i}`, nodeId: 'n' })));
      stream.write(frame(sotwRequest({ typeUrl: 'type.googleapis.com/envoy.config.cluster.v3.Cluster' })));
      await waitUntil(
        () => (relay.debug().types['other']?.requests ?? 0) === 500 && relay.debug().types['type.googleapis.com/envoy.config.cluster.v3.Cluster'] !== undefined,
      );
    });

    it('labels the request metric with known xDS types only, counting made-up ones as "other"', async () => {
      const series = (await registry.metrics()).split('\n').filter((line) => line.startsWith('istio_agent_xds_proxy_requests{'));
      assert.deepEqual(series.sort(), [
        'istio_agent_xds_proxy_requests{type="envoy.config.cluster.v3.Cluster"} 1',
        'istio_agent_xds_proxy_requests{type="other"} 500',
      ]);
    });

    it('keeps one debug entry for the known type and one for "other"', () => {
      assert.equal(Object.keys(relay.debug().types).length, 2);
    });
  });
});

async function waitUntil(condition: () => boolean, timeoutMs = 10_000): Promise<void> {
  await pollUntil(condition, { what: condition.toString(), timeoutMs, intervalMs: 20 });
}
