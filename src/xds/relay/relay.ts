import type { Registry } from '../../metrics/index.ts';
import type { BackoffPolicy, RandomSource } from '../../shared/backoff.ts';
import type { Clock } from '../../shared/clock.ts';
import { formatHostPort } from '../../shared/host-port.ts';
import type { Logger } from '../../shared/log.ts';
import { LastKnownGoodConfig } from '../last-known-good/config.ts';
import { keepaliveDefaults, type KeepaliveOptions } from '../../grpc/keepalive.ts';
import type { EcdsConverter, HealthReportSource, NameTableSink } from '../../discovery/consumers.ts';
import type { AdsStream } from './ads-stream.ts';
import { RelayStream } from './relay-stream.ts';
import type { RelayContext, RelayLimits } from './relay-context.ts';
import { adsMethods, RelayListener } from './relay-listener.ts';
import { SpareUpstreams } from './spare-upstreams.ts';
import { ConfigAvailability } from './config-availability.ts';
import { XdsStats, type RelayDebug } from './stats.ts';
import type { UpstreamOptions } from '../upstream/material.ts';
import type { UpstreamStream } from '../upstream/session.ts';
import { dialWithCredentials, RefusedCertificate } from '../upstream/dial.ts';
import type { XdsMode } from '../../discovery/wire.ts';
import { GrpcStatus } from '../../grpc/grpc-status.ts';

export { adsMethods, maxStreamsPerConnection, xdsConnectionLimits } from './relay-listener.ts';

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
  /** With a readinessProbe in ProxyConfig: the workload's health, sent on every upstream stream (istio.v1.HealthInformation). */
  health?: HealthReportSource;
  /** Opens an upstream call (default: the discovery server at `upstream`, with its credentials); unit tests script it. */
  dialUpstream?: (mode: XdsMode, logger: Logger) => Promise<UpstreamStream>;
}

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
  readonly #refused = new RefusedCertificate();
  readonly #spares: SpareUpstreams;
  /** A dial made ahead of Envoy's first stream (predial), while it is under way. */
  #predialing: { mode: XdsMode; dialing: Promise<UpstreamStream | undefined> } | undefined;
  #listener: RelayListener | undefined;
  #nextId = 1;
  #streamsEnded = false; // endStreams() ran: the agent is stopping its Envoys
  readonly lastKnownGood: LastKnownGoodConfig;
  readonly #availability: ConfigAvailability;
  readonly #unimplementedListeners = new Set<(mode: XdsMode) => void>();
  /** What every stream shares. */
  readonly #context: RelayContext;

  constructor(options: XdsRelayOptions) {
    this.#options = options;
    this.#keepalive = options.keepalive ?? keepaliveDefaults;
    this.#spares = new SpareUpstreams(options.clock, options.logger);
    this.lastKnownGood = options.lastKnownGood ?? new LastKnownGoodConfig();
    this.#stats = new XdsStats(options.registry, options.clock, () => this.servingLastKnownGoodSince());
    this.#availability = new ConfigAvailability(this.lastKnownGood);
    this.#context = this.#makeContext();
  }

  #makeContext(): RelayContext {
    const { clock, backoff, random, nameTables, ecds, health, keepLastKnownGood } = this.#options;
    let node: Buffer | undefined;
    return {
      stats: this.#stats, clock, lastKnownGood: this.lastKnownGood, random, nameTables, ecds, health,
      limits: keepLastKnownGood === false ? { ...limits, pendingBytes: 0 } : limits,
      backoff: backoff ?? reconnectBackoff,
      dial: (mode, logger) => this.#takePredial(mode, logger) ?? this.#spares.take(mode) ?? this.#dial(mode, logger),
      keepSpare: (mode, upstream) => this.#spares.keep(mode, upstream),
      dialed: (ok) => this.#availability.dialed(ok),
      lastDialFailed: () => this.#availability.lastDialFailed,
      node: { get: () => node, set: (next) => (node = next) },
      unimplemented: (mode) => this.#unimplementedListeners.forEach((listener) => listener(mode)),
    };
  }

  /** Listens on the socket (owner-only unless `socketMode` says otherwise); rejects when it cannot. */
  async start(): Promise<void> {
    const { socketPath, socketMode, logger } = this.#options;
    const listener = new RelayListener({
      socketPath,
      socketMode: socketMode ?? 0o600,
      keepalive: this.#keepalive,
      logger,
      // Once endStreams() ran, a reconnecting Envoy is refused: never dialled, so no newer connection follows.
      serve: (mode, ads) => (this.#streamsEnded ? ads.finish(GrpcStatus.UNAVAILABLE, 'the agent is stopping') : this.serve(mode, ads)),
    });
    await listener.listen();
    this.#listener = listener;
    logger.info({ socket: socketPath, upstream: formatHostPort(this.#options.upstream.address) }, 'xDS relay listening');
  }

  /** Relays one ADS call from Envoy (the listener's, or a unit test's in-memory one). */
  serve(mode: XdsMode, ads: AdsStream): RelayStream {
    const id = this.#nextId++;
    const stream = new RelayStream({ id, mode, ads, context: this.#context, logger: this.#options.logger.child({ stream: id }) });
    this.#streams.add(stream);
    this.#stats.streamOpened();
    this.#options.logger.info({ stream: id, mode }, 'Envoy opened an xDS stream');
    void stream.run().then((reason) => {
      this.#streams.delete(stream);
      this.#stats.streamEnded(reason);
    });
    return stream;
  }

  /**
   * Dials the discovery server for Envoy's first stream before Envoy opens
   * it: Envoy takes a while from its spawn to its xDS stream, and the TLS
   * handshake then is no longer on the way to ready. Still one
   * connection: the stream takes this one (a redial's spare when it comes
   * late, closed after 10 s if no stream comes). A failed predial is
   * forgotten; the stream dials as usual.
   */
  predial(mode: XdsMode): void {
    if (this.#streams.size > 0 || this.#predialing || !this.#listener) return;
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
    const { upstream, clock, dialUpstream } = this.#options;
    if (dialUpstream) return dialUpstream(mode, logger);
    return dialWithCredentials({ upstream, refused: this.#refused, path: adsMethods[mode], keepalive: this.#keepalive, clock, stats: this.#stats, logger });
  }

  /**
   * The agent is about to stop its Envoys (newest first, for hot restart): every stream ends now, oldest first, so
   * the newest connection closes last at the discovery server (istiod unregisters a VM only on that one's close).
   */
  endStreams(): void {
    if (this.#streamsEnded) return;
    this.#streamsEnded = true;
    this.#dropPending();
    for (const stream of this.#streams) stream.stop();
  }

  #dropPending(): void {
    const predial = this.#predialing;
    this.#predialing = undefined;
    void predial?.dialing.then((upstream) => upstream?.close());
    this.#spares.dropAll();
  }

  /** Ends every stream and stops listening. */
  async stop(): Promise<void> {
    this.#dropPending();
    for (const stream of this.#streams) stream.stop();
    await Promise.all([...this.#streams].map((stream) => stream.done));
    const listener = this.#listener;
    this.#listener = undefined;
    await listener?.close();
  }

  /** Whether a new Envoy would get config now (see ConfigAvailability); the agent's restart gate reads it. */
  canConfigure(): boolean {
    return this.#availability.available;
  }

  /** Calls `listener` whenever canConfigure() changes. */
  onGateChange(listener: (available: boolean) => void): () => void {
    return this.#availability.onChange(listener);
  }

  /** Calls `listener` each time the server answers a call UNIMPLEMENTED, with the call's flavour (no Delta, or no SotW, there). */
  onUnimplemented(listener: (mode: XdsMode) => void): () => void {
    this.#unimplementedListeners.add(listener);
    return () => this.#unimplementedListeners.delete(listener);
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
      streams: [...this.#streams].map((stream) => ({
        id: stream.id,
        mode: stream.mode,
        since: stream.since.toISOString(),
        upstream: stream.upstreamState,
        credential: stream.upstreamCredential,
        lastKnownGoodSince: iso(stream.lastKnownGoodSince),
      })),
      ...this.#stats.snapshot(),
      kept: this.lastKnownGood.summary(),
    };
  }
}
