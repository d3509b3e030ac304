import type { ServerHttp2Stream } from 'node:http2';
import type { BackoffPolicy, RandomSource } from '../../shared/backoff.ts';
import type { Clock } from '../../shared/clock.ts';
import type { Logger } from '../../shared/log.ts';
import type { UpstreamCredential } from '../upstream/credentials.ts';
import { frame } from '../../grpc/grpc-frame.ts';
import { GrpcStatus } from '../../grpc/grpc-status.ts';
import { GrpcServerCall } from '../../grpc/server-call.ts';
import type { LastKnownGoodConfig } from '../last-known-good/config.ts';
import { LastKnownGoodRecorder } from '../last-known-good/recorder.ts';
import { LastKnownGoodSession } from '../last-known-good/session.ts';
import type { NameTableSink } from './nds-subscription.ts';
import type { EcdsConverter } from './ecds-interceptor.ts';
import { readRequests } from './request-leg.ts';
import type { Ending } from './ending.ts';
import { ResponseLeg } from './response-leg.ts';
import { pauseUntilDrained } from './stream-flow.ts';
import type { TerminationReason, XdsStats } from './stats.ts';
import type { UpstreamStream } from '../upstream/session.ts';
import { readRequest, withNode, type XdsMode } from '../wire.ts';

/** Endings of a working agent (Envoy or the agent closing, a handover, a server without Delta met once): info, not warn. */
const expectedEndings = new Set<TerminationReason>(['envoy_closed', 'relay_stopped', 'handed_over', 'delta_unsupported']);

export interface RelayLimits {
  /** Largest request from Envoy; requests are held whole to read them and maybe add the node. */
  requestBytes: number;
  /** Largest response from the discovery server; responses stream through, never held whole. */
  responseBytes: number;
  /** Most bytes of relayed responses one stream holds until Envoy ACKs them (and the largest kept). */
  pendingBytes: number;
}

export interface RelayStreamOptions {
  id: number;
  mode: XdsMode;
  downstream: ServerHttp2Stream;
  /** Opens the upstream call (reads certs and token, connects); may reject. */
  dial: () => Promise<UpstreamStream>;
  stats: XdsStats;
  logger: Logger;
  /** The node of the last stream that carried one, for a first request without it. */
  node: { get(): Buffer | undefined; set(node: Buffer): void };
  limits: RelayLimits;
  /** The last accepted config: fed by ACKs, and what Envoy is served when upstream is down. */
  lastKnownGood: LastKnownGoodConfig;
  clock: Clock;
  /** Redialling while serving from last-known-good config. */
  backoff: BackoffPolicy;
  random?: RandomSource;
  /** The redial that reached the server: the relay gives it to the next stream of this mode. */
  keepForNextStream(upstream: UpstreamStream): void;
  /** Told every dial's outcome: whether the discovery server can be reached. */
  reachable(ok: boolean): void;
  /** True when the last dial (any stream's) failed. */
  lastDialFailed(): boolean;
  /** With DNS on: the agent subscribes to the name table on this stream and takes its responses. */
  nameTables?: NameTableSink;
  /** With Wasm remote load conversion on: ECDS responses go through it. */
  ecds?: EcdsConverter;
  /** Told when the server answers a Delta call UNIMPLEMENTED. */
  deltaUnimplemented?(): void;
}

/**
 * Where the stream stands with the discovery server: dialling; relaying
 * (`open` once the server answered the call); or serving Envoy from the
 * last-known-good config while redialling.
 */
type Phase =
  | { name: 'dialing' }
  | { name: 'relaying'; upstream: UpstreamStream; responses: ResponseLeg; open: boolean }
  | { name: 'last-known-good'; session: LastKnownGoodSession };

/**
 * One Envoy stream and its own upstream stream. Responses are passed on
 * chunk by chunk as they arrive, so a 50 MB push reaches Envoy while it is
 * still coming in; their type, version and nonce are read on the way.
 * When Envoy does not keep up, upstream reads pause, the HTTP/2 window fills
 * and the server waits: the relay holds about one window, not a queue.
 */
export class RelayStream {
  readonly id: number;
  readonly mode: XdsMode;
  readonly since = new Date();
  /** What the current upstream connection proves us with (/debug/xds). */
  upstreamCredential: UpstreamCredential | undefined;
  readonly #options: RelayStreamOptions;
  #phase: Phase = { name: 'dialing' };
  /** The first reason the stream ends with; set once. */
  #ending: Ending | undefined;
  #firstRequest = true;
  /** Envoy's call: its response headers and status. */
  readonly #call: GrpcServerCall;
  readonly #recorder: LastKnownGoodRecorder;
  readonly #done: Promise<TerminationReason>;
  #resolveDone!: (reason: TerminationReason) => void;

  constructor(options: RelayStreamOptions) {
    this.#options = options;
    this.id = options.id;
    this.mode = options.mode;
    this.#done = new Promise((resolve) => (this.#resolveDone = resolve));
    this.#call = new GrpcServerCall(options.downstream);
    const { mode, lastKnownGood, clock, logger, limits } = options;
    this.#recorder = new LastKnownGoodRecorder({ mode, lastKnownGood, clock, logger, pendingBytes: limits.pendingBytes });
  }

  get done(): Promise<TerminationReason> {
    return this.#done;
  }

  /** For /debug/xds: dialing until the server answers the call, then open; or last-known-good. */
  get upstreamState(): 'dialing' | 'open' | 'last-known-good' {
    const phase = this.#phase;
    if (phase.name === 'last-known-good') return 'last-known-good';
    return phase.name === 'relaying' && phase.open ? 'open' : 'dialing';
  }

  /** When Envoy is served from last-known-good config, since when (ms). */
  get lastKnownGoodSince(): number | undefined {
    return this.#phase.name === 'last-known-good' ? this.#phase.session.since : undefined;
  }

  /** Dials upstream, then relays until either side ends. */
  async run(): Promise<TerminationReason> {
    const { downstream, stats } = this.#options;
    downstream.on('error', () => undefined); // 'close' follows, and ends the relay
    downstream.on('close', () => this.#end({ reason: 'envoy_closed', status: GrpcStatus.CANCELLED, details: 'Envoy closed the stream' }));
    // A dial may take the 10 s connect limit; a new Envoy should not wait that out again.
    if (this.#options.lastDialFailed() && this.#options.lastKnownGood.has(this.mode)) return this.#serveLastKnownGood('the last dial failed; redialling in the background');
    try {
      const upstream = await this.#options.dial();
      if (this.#ending) return (upstream.close(), this.#done);
      this.#phase = { name: 'relaying', upstream, responses: this.#responseLeg(upstream), open: false };
      this.upstreamCredential = upstream.credential;
      stats.upstreamOpened();
      this.#options.reachable(true);
    } catch (error) {
      stats.upstreamFailure('DIAL');
      this.#options.reachable(false);
      const details = `cannot reach the discovery server: ${(error as Error).message}`;
      if (this.#options.lastKnownGood.has(this.mode) && !this.#ending) return this.#serveLastKnownGood(details);
      this.#end({ reason: 'dial_failed', status: GrpcStatus.UNAVAILABLE, details });
      return this.#done;
    }
    const { stream: upstream } = this.#phase.upstream;
    this.#readRequests(() => (upstream.end(), this.#envoyFinished()));
    return this.#done;
  }

  /** Answers Envoy from the last-known-good config, redialling until the discovery server answers. */
  #serveLastKnownGood(reason: string): Promise<TerminationReason> {
    const { downstream } = this.#options;
    const session = new LastKnownGoodSession({
      ...this.#options,
      send: (message) => void downstream.write(frame(message)),
      handover: (upstream) => {
        this.#options.keepForNextStream(upstream);
        this.#end({ reason: 'handed_over', status: GrpcStatus.UNAVAILABLE, details: 'the discovery server answers again: reconnect through the relay' });
      },
    });
    this.#phase = { name: 'last-known-good', session };
    this.#call.respond();
    session.start(reason);
    this.#readRequests(() => this.#envoyFinished());
    return this.#done;
  }

  #responseLeg({ stream: upstream }: UpstreamStream): ResponseLeg {
    const { downstream, limits, stats, logger, nameTables, ecds } = this.#options;
    return new ResponseLeg({
      mode: this.mode, upstream, downstream, maxBytes: limits.responseBytes, recorder: this.#recorder, stats, logger, nameTables, ecds,
      deltaUnimplemented: this.#options.deltaUnimplemented,
      ending: () => this.#ending !== undefined,
      opened: () => {
        if (this.#phase.name === 'relaying') this.#phase.open = true;
        this.#call.respond();
      },
      end: (ending) => this.#end(ending),
    });
  }

  #readRequests(finished: () => void): void {
    readRequests({
      downstream: this.#options.downstream,
      maxBytes: this.#options.limits.requestBytes,
      ending: () => this.#ending !== undefined,
      request: (message) => this.#onRequest(message),
      end: (ending) => this.#end(ending),
      finished,
    });
  }

  /** Throws WireError for a request that does not parse; the caller ends the stream. */
  #onRequest(request: Buffer): void {
    const fields = readRequest(request, this.mode);
    const phase = this.#phase;
    if (phase.name === 'last-known-good') return phase.session.request(fields);
    if (phase.name !== 'relaying') return; // requests are read once relaying or serving, never while dialling
    const message = this.#withNode(request, fields.node);
    const acked = phase.responses.answered(fields);
    this.#options.stats.request(fields, request.length, acked);
    if (acked && fields.error !== undefined) this.#options.logger.warn({ type: fields.typeUrl, version: acked.version, error: fields.error }, 'Envoy rejected a response (NACK)');
    const upstream = phase.upstream.stream;
    if (!upstream.write(frame(message))) pauseUntilDrained(this.#options.downstream, upstream);
    this.#recorder.request(fields); // after the write: the ACK leaves first
    phase.responses.envoyRequested(fields);
  }

  /** Keeps the node of a first request, or adds the last known one when it is missing. */
  #withNode(request: Buffer, node: Buffer | undefined): Buffer {
    if (!this.#firstRequest) return request;
    this.#firstRequest = false;
    if (node) {
      this.#options.node.set(Buffer.from(node));
      return request;
    }
    const known = this.#options.node.get();
    return known ? withNode(request, known, this.mode) : request;
  }

  /**
   * Envoy ended its side: nothing more comes from it, so the stream ends
   * (a server that never ends its own side would keep the upstream call, and
   * a redial loop, open for good), as Istio's agent ends it on Envoy's EOF.
   */
  #envoyFinished(): void {
    this.#end({ reason: 'envoy_closed', status: GrpcStatus.CANCELLED, details: 'Envoy ended the stream' });
  }

  /** Ends both sides once, with the first reason. */
  #end(ending: Ending): void {
    if (this.#ending) return;
    this.#ending = ending;
    const level = expectedEndings.has(ending.reason) ? 'info' : 'warn';
    this.#options.logger[level]({ reason: ending.reason, details: ending.details }, 'xDS stream ended');
    const phase = this.#phase;
    if (phase.name === 'relaying') {
      this.#options.stats.upstreamClosed();
      phase.upstream.close();
      phase.responses.close();
    }
    if (phase.name === 'last-known-good') phase.session.stop();
    this.#finishDownstream(ending);
    this.#resolveDone(ending.reason);
  }

  /** Sends Envoy the status after whatever it has been sent already. */
  #finishDownstream({ status, details }: Ending): void {
    const { downstream } = this.#options;
    if (downstream.closed || downstream.destroyed) return;
    downstream.resume(); // later requests are read and dropped, so the stream can close
    this.#call.finish(status, details);
  }

  /** Ends the stream because the relay is stopping. */
  stop(): void {
    this.#end({ reason: 'relay_stopped', status: GrpcStatus.UNAVAILABLE, details: 'the agent is stopping' });
  }
}
