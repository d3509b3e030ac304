import { chmod, rm } from 'node:fs/promises';
import { promisify } from 'node:util';
import { createGzip, gzip } from 'node:zlib';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { http } from '../shared/node-http.ts';
import { ConnectionCap, shedLog } from '../shared/connection-cap.ts';
import { badFlag, badFile } from '../shared/errors.ts';
import type { TimerHost } from '../shared/clock.ts';
import type { Logger } from '../shared/log.ts';
import { boundSend } from '../shared/send-timeout.ts';
import { isLoopbackPeer } from './access.ts';
import { acceptsGzip } from './negotiate.ts';
import { PipelineGate } from './pipeline.ts';
import { leading, streamTo } from './send-body.ts';
import { handleReadinessHop, handleStatus, type StatusDeps, type StatusRequest, type StatusResponse } from './handler.ts';

/** Disposing it closes it: a recipe's stack takes it as it is. */
export interface StatusServer extends AsyncDisposable {
  port: number;
  close(): Promise<void>;
}

export interface StatusServerOptions {
  port: number;
  /** The Unix socket Envoy's readiness listener forwards to (readiness only). */
  readinessSocketPath: string;
  deps: StatusDeps;
  logger: Logger;
  /** The send timeouts' timers; tests pass a fake to fire them without waiting. */
  timers?: TimerHost;
}

type Handler = (deps: StatusDeps, request: StatusRequest) => Promise<StatusResponse>;

/**
 * The status port faces the pod network. Node's http server holds a
 * connection that sends nothing, or headers a byte at a time, for as long
 * as the peer likes: enough of them exhaust the agent's file descriptors,
 * and readiness, SDS and certificate reads then fail. So: headers within
 * 10 s, a whole request within 20 s, keep-alive idle 5 s, and a cap on
 * connections at once. Node checks the first two on an interval that runs
 * even with no connection open, once per server: every 5 s, not every
 * second, keeps an idle agent's wake-ups near a bare node's (a slow peer is
 * cut at most 5 s late, and the cap still bounds how many it holds).
 */
export const statusServerTimeouts = { headersTimeout: 10_000, requestTimeout: 20_000, keepAliveTimeout: 5_000, connectionsCheckingInterval: 5_000 } as const;
/**
 * 128 connections from the pod network (kubelet, Prometheus), and 32 more
 * only loopback peers may take (the agent's own container and the app's);
 * an idle one is closed to make room before a new one is refused.
 */
export const statusConnectionLimits = { max: 128, reservedForTrusted: 32, idleMs: 30_000 } as const;
/**
 * Every answer must have left within this, or it is destroyed with its
 * connection: a peer that asks for the metrics and never reads would
 * otherwise hold its slot under the cap for good (Prometheus gives up on a
 * scrape after its own 10 s timeout anyway).
 */
export const statusSendTimeoutMs = 10_000;
/** Answers shorter than this go out plain, as Istio's gzip handler leaves them (gzhttp's default minimum). */
export const gzipMinBytes = 1024;
/** Envoy's readiness hop: its one cluster's connections, however many requests reach port 15021. */
export const readinessHopLimits = { max: 64, reservedForTrusted: 0, idleMs: 30_000 } as const;

/**
 * The agent's status server on every interface, as Istio's: the kubelet
 * and Prometheus reach it from outside; quit, drain and debug check for a
 * loopback peer. Envoy's readiness hop comes in on its own socket, so a
 * request relayed from the pod network never looks local.
 */
export async function startStatusServer(options: StatusServerOptions): Promise<StatusServer> {
  const log = (fields: Record<string, unknown>, message: string) => options.logger.warn(fields, message);
  const tcpCap = new ConnectionCap({ ...statusConnectionLimits, trusted: (socket) => isLoopbackPeer(socket.remoteAddress), onShed: shedLog(log, 'status') });
  const hopCap = new ConnectionCap({ ...readinessHopLimits, trusted: () => false, onShed: shedLog(log, 'readiness socket') });
  const tcp = http.createServer(
    statusServerTimeouts,
    inTurn((request, response) => serve(handleStatus, options, tracked(tcpCap, request, response, options.timers), response)),
  );
  const hop = http.createServer(
    statusServerTimeouts,
    inTurn((request, response) => serve(handleReadinessHop, options, tracked(hopCap, request, response, options.timers), response)),
  );
  tcpCap.attach(tcp);
  hopCap.attach(hop);
  await listenTcp(tcp, options.port);
  await listenSocket(hop, options.readinessSocketPath).catch(async (error) => (await close(tcp), Promise.reject(error)));
  const closeBoth = async () => void (await Promise.all([close(tcp), close(hop)]));
  return { port: (tcp.address() as { port: number }).port, close: closeBoth, [Symbol.asyncDispose]: closeBoth };
}

/** A request handler that answers a connection's requests one after the other (see PipelineGate). */
function inTurn(serveOne: (request: IncomingMessage, response: ServerResponse) => Promise<void>) {
  const gate = new PipelineGate();
  // A failure past the handler's own catch (the body's stream) costs its answer, never the agent.
  const start = (request: IncomingMessage, response: ServerResponse) => void serveOne(request, response).catch(() => response.destroy());
  return (request: IncomingMessage, response: ServerResponse) => gate.enter(request.socket, response, () => start(request, response));
}

/**
 * The request's connection counts as busy until its answer is handed over,
 * not until the peer has read it: a peer that never reads then holds an
 * evictable slot, never one a probe is refused for.
 */
function tracked(cap: ConnectionCap, request: IncomingMessage, response: ServerResponse, timers?: TimerHost): Tracked {
  cap.busy(request.socket);
  boundSend(response, statusSendTimeoutMs, timers);
  let released = false;
  const release = () => void (released || ((released = true), cap.idle(request.socket)));
  response.once('close', release);
  return { request, release };
}

interface Tracked {
  request: IncomingMessage;
  release(): void;
}

function close(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}

function listenTcp(server: Server, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) =>
      reject(badFlag('--statusPort', `cannot listen on port ${port} (${error.code ?? error.message})`, error)),
    );
    server.listen(port, () => resolve());
  });
}

/** The socket sits in the agent's own config dir; a stale one from a killed agent is replaced. */
async function listenSocket(server: Server, path: string): Promise<void> {
  await rm(path, { force: true });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) =>
      reject(badFile(path, `cannot listen on the readiness socket (${error.code ?? error.message})`, error)),
    );
    server.listen(path, () => resolve());
  });
  await chmod(path, 0o600);
}

async function serve(handler: Handler, options: StatusServerOptions, { request, release }: Tracked, response: ServerResponse): Promise<void> {
  const aborted = new AbortController();
  response.once('close', () => aborted.abort());
  const result = await handler(options.deps, {
    method: request.method ?? 'GET',
    url: request.url ?? '/',
    remoteAddress: request.socket.remoteAddress ?? '',
    signal: aborted.signal,
  });
  options.logger.debug({ method: request.method, url: request.url, status: result.status, peer: request.socket.remoteAddress ?? 'envoy' }, 'status request');
  const gzip = acceptsGzip(request.headers['accept-encoding']);
  const { head, rest } = typeof result.body === 'string' ? { head: [Buffer.from(result.body)] } : await leading(result.body, gzipMinBytes);
  if (rest && response.destroyed) return void rest.return?.();
  if (rest) {
    // Too long to hold whole: streamed, chunked, gzipped on the way when the client takes it.
    response.writeHead(result.status, headersFor(result.contentType, gzip));
    release();
    if (request.method === 'HEAD') return void (response.end(), void rest.return?.());
    return streamTo(response, head, rest, gzip ? createGzip() : undefined);
  }
  const { body, encoding } = await encode(Buffer.concat(head), gzip);
  if (response.destroyed) return;
  response.writeHead(result.status, { ...headersFor(result.contentType, encoding !== undefined), 'content-length': body.byteLength });
  response.end(request.method === 'HEAD' ? undefined : body, () => result.after?.());
  release();
}

function headersFor(contentType: string, gzip: boolean): Record<string, string> {
  const headers: Record<string, string> = { 'content-type': contentType, vary: 'Accept-Encoding' };
  if (gzip) headers['content-encoding'] = 'gzip';
  return headers;
}

const gzipAsync = promisify(gzip);

/** Gzip when the client takes it and the answer is worth it, as Istio's status port (its whole mux sits behind a gzip handler). */
async function encode(plain: Buffer, takesGzip: boolean): Promise<{ body: Buffer; encoding?: 'gzip' }> {
  if (plain.byteLength < gzipMinBytes || !takesGzip) return { body: plain };
  return { body: await gzipAsync(plain), encoding: 'gzip' };
}
