import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect, createServer, type ClientHttp2Session, type Http2Server, type ServerHttp2Stream } from 'node:http2';
import { after, before, describe, it } from 'node:test';
import { Registry } from '../../metrics/index.ts';
import { FakeClock } from '../../shared/clock.ts';
import { createLogger } from '../../shared/log.ts';
import { LastKnownGoodConfig } from '../last-known-good/config.ts';
import type { UpstreamStream } from '../upstream/session.ts';
import { Http2AdsStream } from './http2-ads-stream.ts';
import type { RelayContext } from './relay-context.ts';
import { RelayStream } from './relay-stream.ts';
import { XdsStats } from './stats.ts';

const path = '/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources';

/** An in-process HTTP/2 server whose streams are handed to `onStream`. */
async function h2Server(onStream: (stream: ServerHttp2Stream) => void): Promise<{ server: Http2Server; url: string }> {
  const server = createServer();
  server.on('stream', onStream);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { server, url: `http://127.0.0.1:${(server.address() as { port: number }).port}` };
}

/**
 * One RelayStream between an in-process "Envoy" (a client of the relay's
 * HTTP/2 server) and an in-process discovery server that answers the call's
 * headers and then never ends it.
 */
describe('RelayStream over HTTP/2 (Http2AdsStream): when Envoy goes away, the upstream call goes too', () => {
  const sessions: ClientHttp2Session[] = [];
  const servers: Http2Server[] = [];
  let upstreamStreams: ServerHttp2Stream[] = [];
  let relayUrl = '';
  let upstreamUrl = '';
  let relays: Promise<unknown>[] = [];

  before(async () => {
    const upstream = await h2Server((stream) => {
      upstreamStreams.push(stream);
      stream.on('error', () => undefined);
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' });
      stream.resume();
    });
    upstreamUrl = upstream.url;
    const relay = await h2Server((downstream) => relays.push(relayStreamFor(downstream).run()));
    relayUrl = relay.url;
    servers.push(upstream.server, relay.server);
  });
  after(async () => {
    for (const session of sessions) session.destroy();
    for (const server of servers) server.close();
  });

  function relayStreamFor(downstream: ServerHttp2Stream): RelayStream {
    const clock = new FakeClock();
    const logger = createLogger({ level: 'fatal' });
    const context: RelayContext = {
      clock,
      dial: async () => {
        const session = connect(upstreamUrl);
        sessions.push(session);
        const stream = session.request({ ':method': 'POST', ':path': path, 'content-type': 'application/grpc', te: 'trailers' });
        stream.on('error', () => undefined);
        return { stream, credential: 'none', held: 'none', close: () => (stream.close(), session.close()) } as unknown as UpstreamStream;
      },
      stats: new XdsStats(new Registry(), clock),
      node: { get: () => undefined, set: () => undefined },
      limits: { requestBytes: 1 << 20, responseBytes: 1 << 20, pendingBytes: 1 << 20 },
      lastKnownGood: new LastKnownGoodConfig(),
      backoff: { initialMs: 100, multiplier: 2, jitter: 0, maxMs: 1000 },
      keepSpare: () => undefined,
      dialed: () => undefined,
      lastDialFailed: () => false,
      unimplemented: () => undefined,
    };
    return new RelayStream({ id: 1, mode: 'sotw', ads: new Http2AdsStream(downstream), context, logger });
  }

  /** Opens Envoy's call through the relay and waits until the discovery server has its stream. */
  async function envoyCall() {
    upstreamStreams = [];
    relays = [];
    const session = connect(relayUrl);
    sessions.push(session);
    const call = session.request({ ':method': 'POST', ':path': path, 'content-type': 'application/grpc', te: 'trailers' });
    call.on('error', () => undefined);
    call.resume();
    while (upstreamStreams.length === 0) await new Promise((resolve) => setImmediate(resolve));
    return { session, call, upstream: upstreamStreams[0]! };
  }

  it('Envoy resets its stream: the relay ends and the upstream stream closes', async () => {
    const { call, upstream } = await envoyCall();
    call.close();
    await Promise.all([relays[0], once(upstream, 'close')]);
  });

  it('Envoy half-closes (END_STREAM) and the server never ends its side: the relay still ends and closes the upstream stream', async () => {
    const { call, upstream } = await envoyCall();
    call.end();
    assert.equal(await relays[0], 'envoy_closed');
    if (!upstream.closed) await once(upstream, 'close');
  });
});
