import { rm } from 'node:fs/promises';
import { createServer, type Server as NetServer, type Socket } from 'node:net';
import type * as Grpc from '@grpc/grpc-js';
import { loadGrpc, type GrpcModule } from '../grpc/load.ts';
import { listenOnUnixSocket } from '../shared/unix-socket.ts';
import type { Logger } from '../shared/log.ts';
import { WireError } from '../grpc/field-scanner.ts';
import type { SdsMetrics } from './metrics.ts';
import { BadSdsRequest, SdsStream, TooManyNames, type Subscriptions } from './sds-stream.ts';
import type { SecretStore } from './secret-store.ts';

const service = '/envoy.service.secret.v3.SecretDiscoveryService';
/** A request names a few secrets; 1 MiB is generous and bounds a garbage length prefix. */
const maxRequestBytes = 1024 * 1024;
/**
 * Connections at once. Envoy holds one (two across a hot restart); the rest
 * is room for tools. Past it new connections are closed at once, and the
 * ones open, Envoy's among them, keep working.
 */
export const maxSdsConnections = 32;
/** Streams one connection may hold open at once, as on the xDS socket (src/xds/relay/relay.ts). */
export const maxSdsStreamsPerConnection = 16;
/** A connection with no call open this long is closed, one that never spoke too; Envoy's always has its stream open. */
export const sdsIdleMs = 15_000;

export interface SdsServerOptions {
  socketPath: string;
  store: SecretStore;
  subscriptions: Subscriptions;
  metrics: SdsMetrics;
  logger: Logger;
  now: () => number;
  /** Tests shorten it. */
  idleMs?: number;
  /** Tests hold it back, to connect before grpc-js is there. */
  loadGrpc?: () => Promise<GrpcModule>;
}

type Status = { code: Grpc.status; details: string };
type Call = Grpc.ServerDuplexStream<Buffer, Buffer>;

/**
 * Envoy's SecretDiscoveryService on a Unix socket (owner-only), served by
 * @grpc/grpc-js: State of the World only, DeltaSecrets and FetchSecrets
 * answer UNIMPLEMENTED, as Istio's agent does. Each stream is pushed the
 * store's changes to the names it holds. Messages stay raw bytes here and
 * are read and written by sds-stream.ts with the relay's wire code.
 *
 * The socket itself is a net.Server of ours whose connections are handed to
 * grpc-js: grpc-js has no connection cap, net.Server has (`maxConnections`).
 * It also lets the socket listen before grpc-js is loaded: grpc-js loads
 * when the first connection comes (Envoy's, once it is up and wants a
 * secret), not on the way to spawning Envoy, where its module loading on
 * the main thread delayed Envoy's start (bench/cost.ts). The
 * connection waits for it; its bytes are kept, and read by grpc-js.
 */
export class SdsServer {
  readonly #options: SdsServerOptions;
  readonly #streams = new Set<SdsStream>();
  readonly #sockets = new Set<Socket>();
  /** Settles once grpc-js serves; undefined if it could not be set up. Made on the first connection. */
  #injector: Promise<Grpc.ConnectionInjector | undefined> | undefined;
  #grpc: Grpc.Server | undefined;
  #listener: NetServer | undefined;
  #nextId = 1;
  #full = false;
  #unsubscribe: (() => void) | undefined;

  constructor(options: SdsServerOptions) {
    this.#options = options;
  }

  async start(): Promise<void> {
    const { socketPath, logger } = this.#options;
    const listener = createServer((socket) => this.#accept(socket));
    listener.maxConnections = maxSdsConnections;
    listener.on('drop', () => this.#dropped());
    await listenOnUnixSocket(listener, { path: socketPath, mode: 0o600, flag: '--sdsSocket' });
    listener.on('error', (error) => logger.warn({ err: error }, 'SDS socket error'));
    this.#listener = listener;
    this.#unsubscribe = this.#options.store.onChange((name) => this.#changed(name));
    logger.info({ socket: socketPath }, 'SDS server listening');
  }

  #grpcInjector(): Promise<Grpc.ConnectionInjector | undefined> {
    this.#injector ??= this.#startGrpc().catch((error: unknown) => {
      this.#options.logger.error({ err: error }, 'cannot start the SDS gRPC server; Envoy gets no secrets');
      for (const socket of this.#sockets) socket.destroy();
      return undefined;
    });
    return this.#injector;
  }

  async #startGrpc(): Promise<Grpc.ConnectionInjector> {
    // Loaded here, not at the top: a pod that serves no SDS never pays for grpc-js.
    const grpc = await (this.#options.loadGrpc ?? loadGrpc)();
    const server = new grpc.Server({
      'grpc.max_receive_message_length': maxRequestBytes,
      'grpc.max_concurrent_streams': maxSdsStreamsPerConnection,
      'grpc.max_connection_idle_ms': this.#options.idleMs ?? sdsIdleMs,
    });
    server.addService(secretService(), {
      StreamSecrets: (call: Call) => this.#serve(call, grpc.status),
      DeltaSecrets: (call: Call) =>
        call.emit('error', { code: grpc.status.UNIMPLEMENTED, details: `${service}/DeltaSecrets: only StreamSecrets (State of the World) is served` }),
      FetchSecrets: (_call: unknown, callback: Grpc.sendUnaryData<Buffer>) =>
        callback({ code: grpc.status.UNIMPLEMENTED, details: `${service}/FetchSecrets: only StreamSecrets (State of the World) is served` }),
    });
    this.#grpc = server;
    return server.createConnectionInjector(grpc.ServerCredentials.createInsecure());
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
    const listener = this.#listener;
    this.#listener = undefined;
    if (listener) {
      const closed = new Promise((resolve) => listener.close(resolve));
      await this.#injector;
      this.#grpc?.forceShutdown();
      for (const socket of this.#sockets) socket.destroy();
      await closed;
    }
    this.#grpc = undefined;
    await rm(this.#options.socketPath, { force: true });
  }

  debug(): unknown {
    const { store } = this.#options;
    const secrets = [...store.entries()].map(([name, entry]) => ({
      name,
      serial: entry.serial,
      expiresAt: new Date(entry.expiresAt).toISOString(),
      files: entry.files,
      problem: store.problem(name),
    }));
    return {
      socket: this.#options.socketPath,
      serving: this.#listener !== undefined,
      connections: this.#sockets.size,
      secrets,
      streams: [...this.#streams].map((stream) => stream.debug()),
    };
  }

  #accept(socket: Socket): void {
    this.#sockets.add(socket);
    this.#full = false;
    socket.on('close', () => this.#sockets.delete(socket));
    // Garbage on the socket ends that connection only; grpc-js's session reports it.
    socket.on('error', (error) => this.#connectionFailed(error));
    void this.#grpcInjector().then((injector) => {
      if (injector && !socket.destroyed && this.#listener) injector.injectConnection(socket);
      else socket.destroy();
    });
  }

  /** One line when the cap is reached, not one per refused connection. */
  #dropped(): void {
    this.#options.metrics.errors.inc({ reason: 'connection_limit' });
    if (this.#full) return;
    this.#full = true;
    this.#options.logger.warn({ limit: maxSdsConnections }, 'SDS socket at its connection cap; refusing new connections until one closes');
  }

  #connectionFailed(error: Error): void {
    this.#options.metrics.errors.inc({ reason: 'connection' });
    this.#options.logger.warn({ err: error }, 'SDS connection failed');
  }

  #serve(call: Call, codes: typeof Grpc.status): void {
    const id = this.#nextId++;
    const logger = this.#options.logger.child({ stream: id });
    const send = (message: Buffer) => {
      if (call.cancelled || call.destroyed || call.writableEnded) return false;
      call.write(message);
      return true;
    };
    const stream = new SdsStream({ ...this.#options, id, logger, send });
    this.#streams.add(stream);
    logger.info('Envoy opened an SDS stream');
    const finish = (status?: Status) => {
      if (!this.#streams.delete(stream)) return;
      stream.close();
      if (call.cancelled || call.destroyed || call.writableEnded) return;
      if (status) call.emit('error', status);
      else call.end();
    };
    call.on('error', () => undefined); // a reset stream; its close does the cleanup
    call.on('cancelled', () => finish());
    call.on('close', () => finish());
    call.on('end', () => finish());
    call.on('data', (bytes: Buffer) => {
      try {
        stream.request(bytes);
      } catch (error) {
        this.#bad(error as Error, finish, codes);
      }
    });
  }

  #bad(error: Error, finish: (status: Status) => void, codes: typeof Grpc.status): void {
    this.#options.metrics.errors.inc({ reason: error instanceof TooManyNames ? 'name_limit' : 'bad_request' });
    this.#options.logger.warn({ err: error }, 'malformed SDS request; ending the stream');
    finish({ code: statusFor(error, codes), details: `malformed SDS request: ${error.message}` });
  }

  #changed(name: string): void {
    for (const stream of this.#streams) if (stream.holds(name)) stream.push();
  }
}

function statusFor(error: Error, codes: typeof Grpc.status): Grpc.status {
  if (error instanceof TooManyNames) return codes.RESOURCE_EXHAUSTED;
  return error instanceof BadSdsRequest || error instanceof WireError ? codes.INVALID_ARGUMENT : codes.INTERNAL;
}

/** Requests and responses stay bytes: sds-stream.ts reads and writes them (see secret-proto.ts for why). */
const bytes = (message: Buffer) => message;
const method = (name: string, responseStream: boolean) => ({
  path: `${service}/${name}`, requestStream: responseStream, responseStream,
  requestSerialize: bytes, requestDeserialize: bytes, responseSerialize: bytes, responseDeserialize: bytes,
});

function secretService(): Grpc.ServiceDefinition {
  return { StreamSecrets: method('StreamSecrets', true), DeltaSecrets: method('DeltaSecrets', true), FetchSecrets: method('FetchSecrets', false) };
}
