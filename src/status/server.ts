import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { badFlag } from '../shared/errors.ts';
import type { Logger } from '../shared/log.ts';
import { handleStatus, type StatusDeps } from './handler.ts';

export interface StatusServer {
  port: number;
  close(): Promise<void>;
}

export interface StatusServerOptions {
  port: number;
  deps: StatusDeps;
  logger: Logger;
}

/**
 * The agent's status server on every interface, as Istio's: the kubelet
 * probes it from outside; mutating endpoints check for local callers.
 */
export async function startStatusServer(options: StatusServerOptions): Promise<StatusServer> {
  const server = createServer((request, response) => void serve(options, request, response));
  await listen(server, options.port);
  const port = (server.address() as { port: number }).port;
  return {
    port,
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

function listen(server: Server, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) => reject(badFlag('--statusPort', `cannot listen on port ${port} (${error.code ?? error.message})`, error)));
    server.listen(port, () => resolve());
  });
}

async function serve(options: StatusServerOptions, request: IncomingMessage, response: ServerResponse): Promise<void> {
  const aborted = new AbortController();
  response.once('close', () => aborted.abort());
  const result = await handleStatus(options.deps, {
    method: request.method ?? 'GET',
    url: request.url ?? '/',
    remoteAddress: request.socket.remoteAddress ?? '',
    signal: aborted.signal,
  });
  options.logger.debug({ method: request.method, url: request.url, status: result.status }, 'status request');
  response.writeHead(result.status, { 'content-type': result.contentType, 'content-length': Buffer.byteLength(result.body) });
  response.end(request.method === 'HEAD' ? undefined : result.body, () => result.after?.());
}
