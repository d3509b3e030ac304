import { chmod, rm } from 'node:fs/promises';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { http } from '../shared/node-http.ts';
import { badFlag, badFile } from '../shared/errors.ts';
import type { Logger } from '../shared/log.ts';
import { handleReadinessHop, handleStatus, type StatusDeps, type StatusRequest, type StatusResponse } from './handler.ts';

export interface StatusServer {
  port: number;
  close(): Promise<void>;
}

export interface StatusServerOptions {
  port: number;
  /** The Unix socket Envoy's readiness listener forwards to (readiness only). */
  readinessSocketPath: string;
  deps: StatusDeps;
  logger: Logger;
}

type Handler = (deps: StatusDeps, request: StatusRequest) => Promise<StatusResponse>;

/**
 * The agent's status server on every interface, as Istio's: the kubelet
 * and Prometheus reach it from outside; quit, drain and debug check for a
 * loopback peer. Envoy's readiness hop comes in on its own socket, so a
 * request relayed from the pod network never looks local.
 */
export async function startStatusServer(options: StatusServerOptions): Promise<StatusServer> {
  const tcp = http.createServer((request, response) => void serve(handleStatus, options, request, response));
  const hop = http.createServer((request, response) => void serve(handleReadinessHop, options, request, response));
  await listenTcp(tcp, options.port);
  await listenSocket(hop, options.readinessSocketPath).catch(async (error) => (await close(tcp), Promise.reject(error)));
  return {
    port: (tcp.address() as { port: number }).port,
    close: async () => void (await Promise.all([close(tcp), close(hop)])),
  };
}

function close(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}

function listenTcp(server: Server, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) => reject(badFlag('--statusPort', `cannot listen on port ${port} (${error.code ?? error.message})`, error)));
    server.listen(port, () => resolve());
  });
}

/** The socket sits in the agent's own config dir; a stale one from a killed agent is replaced. */
async function listenSocket(server: Server, path: string): Promise<void> {
  await rm(path, { force: true });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) => reject(badFile(path, `cannot listen on the readiness socket (${error.code ?? error.message})`, error)));
    server.listen(path, () => resolve());
  });
  await chmod(path, 0o600);
}

async function serve(handler: Handler, options: StatusServerOptions, request: IncomingMessage, response: ServerResponse): Promise<void> {
  const aborted = new AbortController();
  response.once('close', () => aborted.abort());
  const result = await handler(options.deps, {
    method: request.method ?? 'GET',
    url: request.url ?? '/',
    remoteAddress: request.socket.remoteAddress ?? '',
    signal: aborted.signal,
  });
  options.logger.debug({ method: request.method, url: request.url, status: result.status, peer: request.socket.remoteAddress ?? 'envoy' }, 'status request');
  response.writeHead(result.status, { 'content-type': result.contentType, 'content-length': Buffer.byteLength(result.body) });
  response.end(request.method === 'HEAD' ? undefined : result.body, () => result.after?.());
}
