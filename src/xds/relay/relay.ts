import { chmod, lstat, rm } from 'node:fs/promises';
import { createServer, type Http2Server, type Http2Session, type ServerHttp2Stream } from 'node:http2';
import type { Registry } from '../../metrics/index.ts';
import type { BackoffPolicy, RandomSource } from '../../shared/backoff.ts';
import { boundedTimer, type Clock } from '../../shared/clock.ts';
import { ConnectionCap, shedLog } from '../../shared/connection-cap.ts';
import { AgentError } from '../../shared/errors.ts';
import { formatHostPort } from '../../shared/host-port.ts';
import type { Logger } from '../../shared/log.ts';
import { LastKnownGoodConfig } from '../last-known-good/config.ts';
import { routeGrpcCall } from '../../grpc/server-call.ts';
import { keepAlive, keepaliveDefaults, type KeepaliveOptions } from '../../grpc/keepalive.ts';
import type { NameTableSink } from './nds-subscription.ts';
import type { EcdsConverter } from './ecds-interceptor.ts';
import { RelayStream, type RelayLimits } from './relay-stream.ts';
import { SpareUpstreams } from './spare-upstreams.ts';
import { ConfigGate } from './config-gate.ts';
import { XdsStats, type RelayDebug } from './stats.ts';
import type { UpstreamOptions } from '../upstream/material.ts';
import type { UpstreamStream } from '../upstream/session.ts';
import { dialWithCredentials, RefusedCertificate } from '../upstream/dial.ts';
import type { XdsMode } from '../wire.ts';

export interface XdsRelayOptions {
  /** The Unix socket Envoy connects to (`<configPath>/XDS`). */
  socketPath: string;
  /** The socket's mode: 0600 (Envoy runs as the agent's user) unless the app reads it, as proxyless gRPC does (0666, Istio's). */
  socketMode?: number;
  upstream: UpstreamOptions;
  /** The status server's registry; the relay's metrics are registered there. */
  registry: Registry;
  clock: Clock;
  logger: Logger;
  /** HTTP/2 pings on Envoy's connections and the upstream ones (default 30 s, 10 s to answer). */
  keepalive?: KeepaliveOptions;
  /** The last accepted config; a fresh one when absent (the agent passes the one it read from disk). */
  lastKnownGood?: LastKnownGoodConfig;
  /** False: keep nothing (the relay as it was before last-known-good, for the bench's baseline). */
  keepLastKnownGood?: boolean;
  /** Redialling while a stream is served from last-known-good config (default: reconnectBackoff). */
  backoff?: BackoffPolicy;
  /** Jitter for those redials (Math.random when absent). */
  random?: RandomSource;
  /** With DNS on: where the name tables (NDS) go; each stream subscribes to them. */
  nameTables?: NameTableSink;
  /** With Wasm remote load conversion on: rewrites ECDS responses before Envoy sees them. */
  ecds?: EcdsConverter;
}

const service = 'envoy.service.discovery.v3.AggregatedDiscoveryService';
export const adsMethods: Record<XdsMode, string> = {
  sotw: `/${service}/StreamAggregatedResources`,
  delta: `/${service}/DeltaAggregatedResources`,
};

const mib = 1024 * 1024;
/** Requests carry a node and names: 16 MiB is ~200k names. Responses: a 50 MB push, with room. */
const limits: RelayLimits = { requestBytes: 16 * mib, responseBytes: 256 * mib, pendingBytes: 128 * mib };
/**
 * Redials while the discovery server is down. The cap is low so that every
 * agent is back within a few seconds of the server's return, whatever the
 * outage's length; the ±40 % jitter spreads a fleet that lost the server at
 * the same moment, so a 2.5 s cap spreads redials over 1.5–3.5 s.
 */
export const reconnectBackoff: BackoffPolicy = { initialMs: 1_000, multiplier: 1.6, jitter: 0.4, maxMs: 2_500 };
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

/**
 * Serves ADS to Envoy on a Unix socket and relays every stream to the
 * discovery server. It speaks gRPC's framing on node:http2 itself, rather
 * than through a gRPC library, so responses pass through as they arrive
 * instead of being gathered whole first. Failure behaviour: when the
 * upstream ends, Envoy's stream is closed with UNAVAILABLE; Envoy keeps its
 * last config and reconnects with its own backoff, which dials upstream
 * afresh. When a new stream cannot reach upstream and a config Envoy ACKed
 * is kept, the relay serves that (last-known-good) until upstream answers.
 */
export class XdsRelay {
  readonly #options: XdsRelayOptions;
  readonly #keepalive: KeepaliveOptions;
  readonly #stats: XdsStats;
  readonly #streams = new Set<RelayStream>();
  readonly #sessions = new Set<Http2Session>();
  readonly #refused = new RefusedCertificate();
  readonly #spares: SpareUpstreams;
  /** A dial made ahead of Envoy's first stream (predial), while it is under way. */
  #predialing: { mode: XdsMode; dialing: Promise<UpstreamStream | undefined> } | undefined;
  #server: Http2Server | undefined;
  #nextId = 1;
  #node: Buffer | undefined;
  readonly lastKnownGood: LastKnownGoodConfig;
  readonly #gate: ConfigGate;
  readonly #deltaListeners = new Set<() => void>();
  /** ADS calls are relayed; anything else gets the status a gRPC server would give. */
  readonly #methods = new Map(Object.entries(adsMethods).map(([mode, path]) => [path, (stream: ServerHttp2Stream) => this.#serve(mode as XdsMode, stream)]));

  constructor(options: XdsRelayOptions) {
    this.#options = options;
    this.#keepalive = options.keepalive ?? keepaliveDefaults;
    this.#spares = new SpareUpstreams(options.clock, options.logger);
    this.lastKnownGood = options.lastKnownGood ?? new LastKnownGoodConfig();
    this.#stats = new XdsStats(options.registry, options.clock, () => this.servingLastKnownGoodSince());
    this.#gate = new ConfigGate(this.lastKnownGood);
  }

  /** Listens on the socket (owner-only); rejects when it cannot. */
  async start(): Promise<void> {
    const { socketPath, logger } = this.#options;
    await removeStaleSocket(socketPath);
    // Session memory covers responses queued for a slow Envoy; past it new streams are refused.
    const server = createServer({ maxSessionMemory: 512, settings: { maxConcurrentStreams: maxStreamsPerConnection } });
    const cap = new ConnectionCap<Http2Session>({ ...xdsConnectionLimits, trusted: () => false, onShed: shedLog((fields, message) => logger.warn(fields, message), 'xds socket') });
    cap.attach(server, false);
    server.on('session', (session) => cap.admit(session) && this.#track(session));
    server.on('stream', (stream, headers) => {
      const session = stream.session!;
      cap.busy(session);
      stream.once('close', () => cap.idle(session));
      routeGrpcCall(stream, headers, this.#methods);
    });
    server.on('sessionError', (error) => logger.warn({ error: error.message }, 'Envoy connection failed'));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(socketPath, () => (server.off('error', reject), resolve()));
    }).catch((error: unknown) => {
      throw new AgentError('BAD_FLAG', `--configPath: cannot listen on ${socketPath} (${(error as Error).message})`, { cause: error });
    });
    await chmod(socketPath, this.#options.socketMode ?? 0o600);
    this.#server = server;
    logger.info({ socket: socketPath, upstream: formatHostPort(this.#options.upstream.address) }, 'xDS relay listening');
  }

  #track(session: Http2Session): void {
    this.#sessions.add(session);
    session.on('close', () => this.#sessions.delete(session));
    session.on('error', () => undefined); // its streams close too, and report it
    keepAlive(session, this.#keepalive);
  }

  #serve(mode: XdsMode, downstream: ServerHttp2Stream): void {
    const id = this.#nextId++;
    const logger = this.#options.logger.child({ stream: id });
    const stream = new RelayStream({
      id,
      mode,
      downstream,
      dial: () => this.#takePredial(mode, logger) ?? this.#spares.take(mode) ?? this.#dial(mode, logger),
      stats: this.#stats,
      logger,
      node: { get: () => this.#node, set: (node) => (this.#node = node) },
      limits: this.#options.keepLastKnownGood === false ? { ...limits, pendingBytes: 0 } : limits,
      lastKnownGood: this.lastKnownGood,
      clock: this.#options.clock,
      backoff: this.#options.backoff ?? reconnectBackoff,
      random: this.#options.random,
      keepForNextStream: (spare) => this.#spares.keep(mode, spare),
      reachable: (ok) => this.#gate.dialed(ok),
      lastDialFailed: () => this.#gate.lastDialFailed,
      nameTables: this.#options.nameTables,
      ecds: this.#options.ecds,
      deltaUnimplemented: () => this.#deltaUnimplemented(),
    });
    this.#streams.add(stream);
    this.#stats.streamOpened();
    this.#options.logger.info({ stream: id, mode }, 'Envoy opened an xDS stream');
    void stream.run().then((reason) => {
      this.#streams.delete(stream);
      this.#stats.streamEnded(reason);
    });
  }

  /**
   * Dials the discovery server for Envoy's first stream before Envoy opens
   * it: Envoy takes ~60 ms from its spawn to its xDS stream, and the TLS
   * handshake (~10 ms) then is no longer on the way to ready. Still one
   * connection: the stream takes this one (a redial's spare when it comes
   * late, closed after 10 s if no stream comes). A failed predial is
   * forgotten; the stream dials as usual.
   */
  predial(mode: XdsMode): void {
    if (this.#streams.size > 0 || this.#predialing || !this.#server) return;
    const dialing = this.#dial(mode, this.#options.logger).catch(() => undefined);
    this.#predialing = { mode, dialing };
    void dialing.then((upstream) => {
      if (this.#predialing?.dialing !== dialing) return; // a stream took it while it was under way, or stop() dropped it
      this.#predialing = undefined;
      if (upstream) this.#spares.keep(mode, upstream);
    });
  }

  /** The predial under way for this mode, taken by a stream: its connection, or a dial of its own when it failed. */
  #takePredial(mode: XdsMode, logger: Logger): Promise<UpstreamStream> | undefined {
    const predial = this.#predialing;
    if (predial?.mode !== mode) return undefined;
    this.#predialing = undefined;
    return predial.dialing.then((upstream) => upstream ?? this.#dial(mode, logger));
  }

  #dial(mode: XdsMode, logger: Logger): Promise<UpstreamStream> {
    const { upstream, clock } = this.#options;
    return dialWithCredentials({ upstream, refused: this.#refused, path: adsMethods[mode], keepalive: this.#keepalive, clock, stats: this.#stats, logger });
  }

  /** Ends every stream and stops listening. */
  async stop(): Promise<void> {
    const predial = this.#predialing;
    this.#predialing = undefined;
    void predial?.dialing.then((upstream) => upstream?.close());
    this.#spares.dropAll();
    for (const stream of this.#streams) stream.stop();
    await Promise.all([...this.#streams].map((stream) => stream.done));
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

  /** Whether a new Envoy would get config now (see ConfigGate); the restart gate reads it. */
  canConfigure(): boolean {
    return this.#gate.open;
  }

  /** Calls `listener` whenever canConfigure() changes. */
  onGateChange(listener: (open: boolean) => void): () => void {
    return this.#gate.onChange(listener);
  }

  /** Calls `listener` each time the server answers a Delta call UNIMPLEMENTED (no Delta xDS there). */
  onDeltaUnimplemented(listener: () => void): () => void {
    this.#deltaListeners.add(listener);
    return () => this.#deltaListeners.delete(listener);
  }

  #deltaUnimplemented(): void {
    for (const listener of this.#deltaListeners) listener();
  }

  /** Since when (ms) the oldest stream still served from last-known-good config is; undefined when none is. */
  servingLastKnownGoodSince(): number | undefined {
    const since = [...this.#streams].map((stream) => stream.lastKnownGoodSince).filter((at) => at !== undefined);
    return since.length > 0 ? Math.min(...since) : undefined;
  }

  /** JSON for the status server: per type and per stream. */
  debug(): RelayDebug {
    const iso = (at: number | undefined) => (at === undefined ? undefined : new Date(at).toISOString());
    return {
      socket: this.#options.socketPath,
      upstream: formatHostPort(this.#options.upstream.address),
      servingLastKnownGoodSince: iso(this.servingLastKnownGoodSince()),
      streams: [...this.#streams].map((stream) => ({ id: stream.id, mode: stream.mode, since: stream.since.toISOString(), upstream: stream.upstreamState, credential: stream.upstreamCredential, lastKnownGoodSince: iso(stream.lastKnownGoodSince) })),
      ...this.#stats.snapshot(),
      kept: this.lastKnownGood.summary(),
    };
  }
}

/** A socket left by an earlier run is removed; anything else at that path is the operator's, and bad input. */
async function removeStaleSocket(socketPath: string): Promise<void> {
  const info = await lstat(socketPath).catch(() => undefined);
  if (!info) return;
  if (!info.isSocket()) throw new AgentError('BAD_FLAG', `--configPath: ${socketPath} exists and is not a socket (${info.isDirectory() ? 'a directory' : 'a file'}); remove it`);
  await rm(socketPath, { force: true });
}
