import {
  connect as connectHttp2,
  createServer,
  type ClientHttp2Session,
  type ClientHttp2Stream,
  type Http2Session,
  type IncomingHttpHeaders,
  type ServerHttp2Stream,
} from 'node:http2';
import { connect as connectSocket, createServer as createTcpServer, type Socket } from 'node:net';
import { adsMethods } from '../../src/xds/relay/relay.ts';

/**
 * A discovery server that does exactly what a test scripts, byte by byte:
 * what no real control plane can be made to do (garbage, a huge frame, a
 * message sent in halves).
 */
export async function startScriptedUpstream(script: (stream: ServerHttp2Stream, headers: IncomingHttpHeaders) => void, port = 0) {
  const server = createServer();
  const sessions = new Set<Http2Session>();
  server.on('session', (session) => (sessions.add(session), session.on('error', () => undefined)));
  server.on('stream', (stream, headers) => {
    stream.on('error', () => undefined);
    script(stream, headers);
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    // An http2 server waits for its sessions to end; a test must not.
    close: () => new Promise<void>((resolve) => (server.close(() => resolve()), sessions.forEach((session) => session.destroy()))),
  };
}

/** Envoy's side without a gRPC library: an ADS call on the relay's socket, bytes in and out. */
export function rawAdsCall(socketPath: string): { session: ClientHttp2Session; stream: ClientHttp2Stream } {
  const session = connectHttp2('http://localhost', { createConnection: () => connectSocket(socketPath) });
  session.on('error', () => undefined);
  const stream = session.request({ ':method': 'POST', ':path': adsMethods.sotw, 'content-type': 'application/grpc', te: 'trailers' });
  stream.on('error', () => undefined);
  return { session, stream };
}

/** A TCP relay in front of a port that can be frozen: bytes stop, sockets stay open (a vanished peer). */
export async function startFreezableProxy(targetPort: number) {
  const sockets = new Set<Socket>();
  let frozen = false;
  const server = createTcpServer((client) => {
    const target = connectSocket(targetPort, '127.0.0.1');
    for (const [from, to] of [[client, target], [target, client]] as const) {
      sockets.add(from);
      from.on('error', () => undefined);
      from.on('data', (chunk) => frozen || to.write(chunk));
      from.on('close', () => to.destroy());
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    freeze: () => (frozen = true),
    close: () => new Promise<void>((resolve) => (sockets.forEach((socket) => socket.destroy()), server.close(() => resolve()))),
  };
}

/**
 * A TCP relay in front of an HTTP/2 (h2c) server that drops the server's
 * RST_STREAM frames (type 3): a server that ends a call with trailers and
 * leaves our side of the stream open, as HTTP/2 allows, which node:http2's
 * own server never does.
 */
export async function startRstDroppingProxy(targetPort: number) {
  const sockets = new Set<Socket>();
  const server = createTcpServer((client) => {
    const target = connectSocket(targetPort, '127.0.0.1');
    let pending = Buffer.alloc(0);
    for (const socket of [client, target]) {
      sockets.add(socket);
      socket.on('error', () => undefined);
    }
    client.on('data', (chunk) => target.write(chunk));
    target.on('data', (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      // Whole frames only: a 9-byte header (24-bit length, type, flags, stream id), then the payload.
      while (pending.length >= 9 && pending.length >= 9 + pending.readUIntBE(0, 3)) {
        const size = 9 + pending.readUIntBE(0, 3);
        if (pending[3] !== 3) client.write(pending.subarray(0, size));
        pending = pending.subarray(size);
      }
    });
    client.on('close', () => target.destroy());
    target.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    close: () => new Promise<void>((resolve) => (sockets.forEach((socket) => socket.destroy()), server.close(() => resolve()))),
  };
}

const grpcOk = { ':status': 200, 'content-type': 'application/grpc' };

/**
 * A scripted discovery server behind startRstDroppingProxy that ends its
 * first call with an OK status (trailers, no RST_STREAM) once Envoy's first
 * request arrived; later calls stay open. `port` is the relay's; both close
 * with `cleanup`.
 */
export async function startTrailersEndingServer(cleanup: AsyncDisposableStack) {
  let calls = 0;
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
  return { port: proxy.port, calls: () => calls };
}
