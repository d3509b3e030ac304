import { chmod, rm } from 'node:fs/promises';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import { boundedTimer } from '../shared/clock.ts';
import { http } from '../shared/node-http.ts';
import { ConnectionCap, shedLog } from '../shared/connection-cap.ts';
import { badFlag, badFile } from '../shared/errors.ts';
import type { Logger } from '../shared/log.ts';
import { isLoopbackPeer } from './access.ts';
import { handleReadinessHop, handleStatus, type StatusDeps, type StatusRequest, type StatusResponse } from './handler.ts';

const gzipAsync = promisify(gzip);

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
  const tcp = http.createServer(statusServerTimeouts, (request, response) => void serve(handleStatus, options, tracked(tcpCap, request, response), response));
  const hop = http.createServer(statusServerTimeouts, (request, response) => void serve(handleReadinessHop, options, tracked(hopCap, request, response), response));
  tcpCap.attach(tcp);
  hopCap.attach(hop);
  await listenTcp(tcp, options.port);
  await listenSocket(hop, options.readinessSocketPath).catch(async (error) => (await close(tcp), Promise.reject(error)));
  return {
    port: (tcp.address() as { port: number }).port,
    close: async () => void (await Promise.all([close(tcp), close(hop)])),
  };
}

/**
 * The request's connection counts as busy until its response is handed to
 * the socket: a peer that then never reads holds no slot the cap cannot
 * take back for a probe (it is idle, and the idlest goes first), and the
 * send timeout closes it.
 */
function tracked(cap: ConnectionCap, request: IncomingMessage, response: ServerResponse): IncomingMessage {
  cap.busy(request.socket);
  let done = false;
  const idle = () => void (done || ((done = true), cap.idle(request.socket)));
  response.once('close', idle);
  response.once('prefinish', idle);
  return request;
}

/** A response not taken by the peer within this long is cut: a reader that stops reading costs a bounded time. */
export const sendTimeoutMs = 10_000;
/** Below this a body goes as is: gzip would cost more than it saves. */
const gzipFromBytes = 1024;

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
  const body = await encodeBody(result.body, request.headers['accept-encoding']);
  if (response.destroyed) return;
  response.writeHead(result.status, { 'content-type': result.contentType, 'content-length': body.bytes.length, ...(body.gzip ? { 'content-encoding': 'gzip' } : {}), vary: 'accept-encoding' });
  const timer = boundedTimer(() => request.socket.destroy(), sendTimeoutMs, { unref: true });
  response.once('close', () => timer.cancel());
  response.end(request.method === 'HEAD' ? undefined : body.bytes, () => (timer.cancel(), result.after?.()));
}

/** `Accept-Encoding` names gzip with a weight above 0. */
export function acceptsGzip(header: string | undefined): boolean {
  return (header ?? '').split(',').some((part) => {
    const [coding = '', ...params] = part.trim().toLowerCase().split(';');
    const weight = params.map((param) => /^\s*q=([\d.]+)\s*$/.exec(param)?.[1]).find((value) => value !== undefined);
    return coding.trim() === 'gzip' && (weight === undefined || Number(weight) > 0);
  });
}

/** gzip when the peer asks for it (Prometheus does) and the body is worth it, as Istio's status server. */
async function encodeBody(text: string, acceptEncoding: string | undefined): Promise<{ bytes: Buffer; gzip: boolean }> {
  const bytes = Buffer.from(text);
  if (!acceptsGzip(acceptEncoding) || bytes.length < gzipFromBytes) return { bytes, gzip: false };
  return { bytes: await gzipAsync(bytes), gzip: true };
}
