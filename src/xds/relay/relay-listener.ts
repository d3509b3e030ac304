import { lstat, rm } from 'node:fs/promises';
import { createServer, type Http2Server, type Http2Session, type ServerHttp2Stream } from 'node:http2';
import { boundedTimer } from '../../shared/clock.ts';
import { ConnectionCap, shedLog } from '../../shared/connection-cap.ts';
import { AgentError } from '../../shared/errors.ts';
import type { Logger } from '../../shared/log.ts';
import { listenOnUnixSocket } from '../../shared/unix-socket.ts';
import { routeGrpcCall } from '../../grpc/server-call.ts';
import { keepAlive, type KeepaliveOptions } from '../../grpc/keepalive.ts';
import type { XdsMode } from '../../discovery/wire.ts';
import { Http2AdsStream } from './http2-ads-stream.ts';
import type { AdsStream } from './ads-stream.ts';

const service = 'envoy.service.discovery.v3.AggregatedDiscoveryService';
export const adsMethods: Record<XdsMode, string> = {
  sotw: `/${service}/StreamAggregatedResources`,
  delta: `/${service}/DeltaAggregatedResources`,
};

/**
 * Streams one Envoy connection may hold open at once. Envoy runs one ADS
 * stream (two briefly while it replaces one); every stream dials the
 * discovery server, so an unbounded count would let one client open
 * upstream streams without limit.
 */
export const maxStreamsPerConnection = 16;
/**
 * Connections to the socket at once. Envoy holds one (two across a hot
 * restart); the socket is 0600 in a 0700 dir, so anything else is our own
 * uid. A connection with no stream open for a minute (it sent no preface,
 * or Envoy backs off) is closed, and an idle one makes room for a new one
 * before the new one is refused: Envoy's ADS connection always has its stream.
 */
export const xdsConnectionLimits = { max: 16, reservedForTrusted: 0, idleMs: 60_000 } as const;
/** How long a stopping relay waits for Envoy's connections to take their last frames. */
const closeGraceMs = 1_000;

export interface RelayListenerOptions {
  socketPath: string;
  socketMode: number;
  keepalive: KeepaliveOptions;
  logger: Logger;
  /** One ADS call from Envoy, of either mode. */
  serve(mode: XdsMode, ads: AdsStream): void;
}

/**
 * The Unix socket Envoy's ADS calls come in on: HTTP/2 with bounded
 * connections and streams, each ADS call handed on as an AdsStream, and
 * anything else answered the way a gRPC server would.
 */
export class RelayListener {
  readonly #options: RelayListenerOptions;
  readonly #sessions = new Set<Http2Session>();
  readonly #methods: Map<string, (stream: ServerHttp2Stream) => void>;
  #server: Http2Server | undefined;

  constructor(options: RelayListenerOptions) {
    this.#options = options;
    const serve = (mode: XdsMode) => (stream: ServerHttp2Stream) => options.serve(mode, new Http2AdsStream(stream));
    this.#methods = new Map(Object.entries(adsMethods).map(([mode, path]) => [path, serve(mode as XdsMode)]));
  }

  /** Listens on the socket; rejects when it cannot. */
  async listen(): Promise<void> {
    const { socketPath, socketMode, logger } = this.#options;
    await removeStaleSocket(socketPath);
    // Session memory covers responses queued for a slow Envoy; past it new streams are refused.
    const server = createServer({ maxSessionMemory: 512, settings: { maxConcurrentStreams: maxStreamsPerConnection } });
    const cap = new ConnectionCap<Http2Session>({
      ...xdsConnectionLimits,
      trusted: () => false,
      onShed: shedLog((fields, message) => logger.warn(fields, message), 'xds socket'),
    });
    cap.attach(server, false);
    server.on('session', (session) => cap.admit(session) && this.#track(session));
    server.on('stream', (stream, headers) => {
      const session = stream.session!;
      cap.busy(session);
      stream.once('close', () => cap.idle(session));
      routeGrpcCall(stream, headers, this.#methods);
    });
    server.on('sessionError', (error) => logger.warn({ error: error.message }, 'Envoy connection failed'));
    await listenOnUnixSocket(server, { path: socketPath, mode: socketMode, flag: '--configPath' });
    this.#server = server;
  }

  #track(session: Http2Session): void {
    this.#sessions.add(session);
    session.on('close', () => this.#sessions.delete(session));
    session.on('error', () => undefined); // its streams close too, and report it
    keepAlive(session, this.#options.keepalive);
  }

  /** Stops listening, gives Envoy's connections a grace to take their last frames, and removes the socket. */
  async close(): Promise<void> {
    const server = this.#server;
    this.#server = undefined;
    if (server) {
      const closed = new Promise((resolve) => server.close(resolve));
      for (const session of this.#sessions) session.close();
      const grace = boundedTimer(() => this.#sessions.forEach((session) => session.destroy()), closeGraceMs);
      await closed;
      grace.cancel();
    }
    await rm(this.#options.socketPath, { force: true });
  }
}

/** A socket left by an earlier run is removed; anything else at that path is the operator's, and bad input. */
async function removeStaleSocket(socketPath: string): Promise<void> {
  const info = await lstat(socketPath).catch(() => undefined);
  if (!info) return;
  if (!info.isSocket())
    throw new AgentError('BAD_FLAG', `--configPath: ${socketPath} exists and is not a socket (${info.isDirectory() ? 'a directory' : 'a file'}); remove it`);
  await rm(socketPath, { force: true });
}
