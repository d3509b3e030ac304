import { chmod, rm } from 'node:fs/promises';
import { createServer, type Http2Server, type Http2Session, type IncomingHttpHeaders, type ServerHttp2Stream } from 'node:http2';
import { endCall, readMessages, rejectCall, sendMessage } from '../grpc/server-call.ts';
import { AgentError } from '../shared/errors.ts';
import type { Logger } from '../shared/log.ts';
import { FrameTooLarge } from '../xds/grpc-frame.ts';
import { WireError } from '../xds/wire.ts';
import { GrpcStatus, type GrpcStatusCode } from '../xds/grpc-status.ts';
import type { SdsMetrics } from './metrics.ts';
import { BadSdsRequest, SdsStream, type Subscriptions } from './sds-stream.ts';
import type { SecretStore } from './secret-store.ts';

const service = '/envoy.service.secret.v3.SecretDiscoveryService';
const streamPath = `${service}/StreamSecrets`;
/** A request names a few secrets; 1 MiB is generous and bounds a garbage length prefix. */
const maxRequestBytes = 1024 * 1024;

export interface SdsServerOptions {
  socketPath: string;
  store: SecretStore;
  subscriptions: Subscriptions;
  metrics: SdsMetrics;
  logger: Logger;
  now: () => number;
}

/**
 * Envoy's SecretDiscoveryService on a Unix socket (owner-only), State of the
 * World only: DeltaSecrets and FetchSecrets answer UNIMPLEMENTED, as Istio's
 * agent does. Each stream is pushed the store's changes to the names it holds.
 */
export class SdsServer {
  readonly #options: SdsServerOptions;
  readonly #streams = new Set<SdsStream>();
  readonly #sessions = new Set<Http2Session>();
  #server: Http2Server | undefined;
  #nextId = 1;
  #unsubscribe: (() => void) | undefined;

  constructor(options: SdsServerOptions) {
    this.#options = options;
  }

  async start(): Promise<void> {
    const { socketPath, logger } = this.#options;
    const server = createServer();
    server.on('session', (session) => this.#track(session));
    server.on('stream', (stream, headers) => this.#route(stream, headers));
    server.on('sessionError', (error) => this.#connectionFailed(error));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(socketPath, () => (server.off('error', reject), resolve()));
    }).catch((error: unknown) => {
      throw new AgentError('BAD_FLAG', `--sdsSocket: cannot listen on ${socketPath} (${(error as Error).message})`, { cause: error });
    });
    await chmod(socketPath, 0o600);
    this.#server = server;
    this.#unsubscribe = this.#options.store.onChange((name) => this.#changed(name));
    logger.info({ socket: socketPath }, 'SDS server listening');
  }

  /** Files whose bytes some stream was sent: a change to them needs no restart. */
  coveredFiles(): Set<string> {
    const files = new Set<string>();
    for (const stream of this.#streams) {
      for (const held of stream.debug().secrets) for (const file of this.#options.store.get(held.name)?.files ?? []) files.add(file);
    }
    return files;
  }

  async stop(): Promise<void> {
    this.#unsubscribe?.();
    for (const stream of this.#streams) stream.close();
    this.#streams.clear();
    const server = this.#server;
    this.#server = undefined;
    if (server) {
      const closed = new Promise((resolve) => server.close(resolve));
      for (const session of this.#sessions) session.destroy();
      await closed;
    }
    await rm(this.#options.socketPath, { force: true });
  }

  debug(): unknown {
    const { store } = this.#options;
    const secrets = [...store.entries()].map(([name, entry]) => ({ name, serial: entry.serial, expiresAt: new Date(entry.expiresAt).toISOString(), files: entry.files, problem: store.problem(name) }));
    return { socket: this.#options.socketPath, serving: this.#server !== undefined, secrets, streams: [...this.#streams].map((stream) => stream.debug()) };
  }

  #track(session: Http2Session): void {
    this.#sessions.add(session);
    session.on('close', () => this.#sessions.delete(session));
    session.on('error', (error) => this.#connectionFailed(error));
  }

  /** Garbage on the socket ends that connection only. */
  #connectionFailed(error: Error): void {
    this.#options.metrics.errors.inc({ reason: 'connection' });
    this.#options.logger.warn({ error: error.message }, 'SDS connection failed');
  }

  #route(stream: ServerHttp2Stream, headers: IncomingHttpHeaders): void {
    stream.on('error', () => undefined); // a reset stream; its close does the cleanup
    if (headers[':method'] !== 'POST' || !headers['content-type']?.startsWith('application/grpc')) {
      return void stream.respond({ ':status': 415 }, { endStream: true });
    }
    const path = headers[':path'] ?? '';
    if (path !== streamPath) {
      const what = path.startsWith(`${service}/`) ? 'only StreamSecrets (State of the World) is served' : 'unknown method';
      return rejectCall(stream, GrpcStatus.UNIMPLEMENTED, `${path}: ${what}`);
    }
    this.#serve(stream);
  }

  #serve(call: ServerHttp2Stream): void {
    const id = this.#nextId++;
    const logger = this.#options.logger.child({ stream: id });
    const stream = new SdsStream({ ...this.#options, id, logger, send: (message) => sendMessage(call, message) });
    this.#streams.add(stream);
    logger.info('Envoy opened an SDS stream');
    const finish = (code: GrpcStatusCode, message: string) => {
      if (!this.#streams.delete(stream)) return;
      stream.close();
      endCall(call, code, message);
    };
    call.on('close', () => finish(GrpcStatus.CANCELLED, 'closed'));
    readMessages(call, maxRequestBytes, {
      message: (bytes) => this.#request(stream, bytes, finish),
      error: (error) => this.#bad(error, finish),
      end: () => finish(GrpcStatus.OK, ''),
    });
  }

  #request(stream: SdsStream, bytes: Buffer, finish: (code: GrpcStatusCode, message: string) => void): void {
    try {
      stream.request(bytes);
    } catch (error) {
      this.#bad(error as Error, finish);
    }
  }

  #bad(error: Error, finish: (code: GrpcStatusCode, message: string) => void): void {
    this.#options.metrics.errors.inc({ reason: 'bad_request' });
    this.#options.logger.warn({ error: error.message }, 'malformed SDS request; ending the stream');
    finish(statusFor(error), `malformed SDS request: ${error.message}`);
  }

  #changed(name: string): void {
    for (const stream of this.#streams) if (stream.holds(name)) stream.push();
  }
}

function statusFor(error: Error): GrpcStatusCode {
  if (error instanceof FrameTooLarge) return GrpcStatus.RESOURCE_EXHAUSTED;
  return error instanceof BadSdsRequest || error instanceof WireError ? GrpcStatus.INVALID_ARGUMENT : GrpcStatus.INTERNAL;
}
