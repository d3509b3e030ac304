import * as grpc from '@grpc/grpc-js';
import { createServer as createHttpServer, type IncomingHttpHeaders } from 'node:http';
import { createSecureServer as createSecureHttp2Server } from 'node:http2';
import { createServer as createHttpsServer } from 'node:https';
import { createServer as createTcpServer, type Server as TcpServer } from 'node:net';

/** An app whose health the test flips; every app listens on 127.0.0.1 only. */
export interface ProbeApp {
  port: number;
  setHealthy(healthy: boolean): Promise<void>;
  close(): Promise<void>;
}

/** HTTP: 200 while healthy, 503 otherwise; `/slow` never answers; `/moved` redirects to `/healthz`; `/metrics` serves `metrics()`. */
export async function startHttpApp(metrics: () => string = () => ''): Promise<ProbeApp & { lastHeaders?: IncomingHttpHeaders }> {
  const app: { healthy: boolean; lastHeaders?: IncomingHttpHeaders } = { healthy: true };
  const server = createHttpServer((request, response) => {
    if (request.url === '/slow') return;
    if (request.url === '/metrics') return void response.end(metrics());
    if (request.url === '/moved') return void response.writeHead(302, { location: '/healthz' }).end();
    app.lastHeaders = request.headers;
    response.writeHead(app.healthy ? 200 : 503).end(app.healthy ? 'ok' : 'sick');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    get lastHeaders() {
      return app.lastHeaders;
    },
    setHealthy: async (healthy) => void (app.healthy = healthy),
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

/** TCP: healthy while listening; unhealthy closes the port, healthy listens on it again. */
export async function startTcpApp(): Promise<ProbeApp> {
  let server: TcpServer | undefined;
  const listen = (port: number) => new Promise<number>((resolve) => {
    server = createTcpServer((socket) => socket.destroy());
    server.listen(port, '127.0.0.1', () => resolve((server!.address() as { port: number }).port));
  });
  const stop = () => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  const port = await listen(0);
  return {
    port,
    setHealthy: async (healthy) => {
      await stop();
      server = undefined;
      if (healthy) await listen(port);
    },
    close: stop,
  };
}

const identity = (bytes: Buffer) => bytes;
const healthService: grpc.ServiceDefinition = {
  Check: {
    path: '/grpc.health.v1.Health/Check',
    requestStream: false,
    responseStream: false,
    requestSerialize: identity,
    requestDeserialize: identity,
    responseSerialize: identity,
    responseDeserialize: identity,
  },
};

/** gRPC on `host`: a grpc-js grpc.health.v1 service answering SERVING (1) or NOT_SERVING (2), recording each call's service and source address. */
export async function startGrpcApp(host = '127.0.0.1'): Promise<ProbeApp & { services: string[]; sources: string[] }> {
  const app = { healthy: true, services: [] as string[], sources: [] as string[] };
  const server = new grpc.Server();
  server.addService(healthService, {
    Check: (call: grpc.ServerUnaryCall<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>) => {
      app.services.push(call.request.length > 2 ? call.request.subarray(2).toString() : '');
      app.sources.push(call.getPeer().replace(/:\d+$/, '').replace(/^\[|\]$/g, ''));
      callback(null, Buffer.from([0x08, app.healthy ? 1 : 2]));
    },
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(`${host}:0`, grpc.ServerCredentials.createInsecure(), (error, bound) => (error ? reject(error) : resolve(bound))),
  );
  return {
    port,
    services: app.services,
    sources: app.sources,
    setHealthy: async (healthy) => void (app.healthy = healthy),
    close: () => new Promise((resolve) => server.tryShutdown(() => resolve())),
  };
}

/** What one request to a recording app came with. */
export interface SeenRequest {
  address: string;
  port: number;
  path: string;
  httpVersion: string;
}

/** An app that answers 200 to anything and records who asked (tcp: connections, path ''). */
export interface RecordingApp {
  port: number;
  seen: SeenRequest[];
  close(): Promise<void>;
}

/** HTTP/1.1 on `host`; with `tls`, HTTPS that also speaks h2 (ALPN) unless `http1Only`. */
export async function startRecordingHttpApp(host: string, tls?: { cert: string; key: string; http1Only?: boolean }): Promise<RecordingApp> {
  const seen: SeenRequest[] = [];
  const handle = (
    request: { socket: { remoteAddress?: string; remotePort?: number }; url?: string; httpVersion: string },
    response: { writeHead(status: number): { end(body: string): void } },
  ) => {
    seen.push({ address: request.socket.remoteAddress ?? '', port: request.socket.remotePort ?? 0, path: request.url ?? '', httpVersion: request.httpVersion });
    response.writeHead(200).end('ok');
  };
  const server = !tls ? createHttpServer(handle)
    : tls.http1Only ? createHttpsServer({ cert: tls.cert, key: tls.key }, handle)
      : createSecureHttp2Server({ cert: tls.cert, key: tls.key, allowHTTP1: true }, handle);
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const sockets = new Set<import('node:net').Socket>();
  server.on('connection', (socket) => (sockets.add(socket), socket.once('close', () => sockets.delete(socket))));
  server.on('secureConnection', (socket) => (sockets.add(socket), socket.once('close', () => sockets.delete(socket))));
  return {
    port: (server.address() as { port: number }).port,
    seen,
    close: () => {
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

/** TCP on `host`: accepts and closes, recording each connection's source. */
export async function startRecordingTcpApp(host: string): Promise<RecordingApp> {
  const seen: SeenRequest[] = [];
  const server = createTcpServer((socket) => {
    seen.push({ address: socket.remoteAddress ?? '', port: socket.remotePort ?? 0, path: '', httpVersion: '' });
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return { port: (server.address() as { port: number }).port, seen, close: () => new Promise((resolve) => server.close(() => resolve())) };
}
