import type { IncomingHttpHeaders, ServerHttp2Stream } from 'node:http2';
import type { BackoffPolicy, RandomSource } from '../../shared/backoff.ts';
import type { Clock } from '../../shared/clock.ts';
import type { Logger } from '../../shared/log.ts';
import type { UpstreamCredential } from '../upstream/credentials.ts';
import { frame, FrameTooLarge, GrpcFrameReader } from '../../grpc/grpc-frame.ts';
import { GrpcStatus, statusFromHeaders, statusName } from '../../grpc/grpc-status.ts';
import { GrpcServerCall } from '../../grpc/server-call.ts';
import type { LastKnownGoodConfig } from '../last-known-good/config.ts';
import { LastKnownGoodRecorder } from '../last-known-good/recorder.ts';
import { LastKnownGoodSession } from '../last-known-good/session.ts';
import { NdsSubscription, type NameTableSink } from './nds-subscription.ts';
import { EcdsInterceptor, type EcdsConverter } from './ecds-interceptor.ts';
import { tapResponses } from './response-tap.ts';
import { corkUntilNextTick, pauseUntilDrained } from './stream-flow.ts';
import type { TerminationReason, XdsStats } from './stats.ts';
import type { UpstreamStream } from '../upstream/session.ts';
import { readRequest, withNode, type ResponseFields, type XdsMode } from '../wire.ts';

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
}

/** How a relayed stream ended, and the status Envoy's stream is closed with. */
interface Ending {
  reason: TerminationReason;
  status: number;
  details: string;
}

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
  upstreamState: 'dialing' | 'open' | 'last-known-good' = 'dialing';
  /** What the current upstream connection proves us with (/debug/xds). */
  upstreamCredential: UpstreamCredential | undefined;
  readonly #options: RelayStreamOptions;
  #upstream: UpstreamStream | undefined;
  #ending: Ending | undefined;
  /** What upstream's trailers (or Trailers-Only headers) said. */
  #upstreamStatus: { code: number; message: string } | undefined;
  #upstreamError: Error | undefined;
  #firstRequest = true;
  /** Per type: the last response sent, to tell which one a request answers. */
  readonly #sent = new Map<string, { version: string; nonce: string }>();
  readonly #requests: GrpcFrameReader;
  readonly #responses: GrpcFrameReader;
  /** Envoy's call: its response headers and status. */
  readonly #call: GrpcServerCall;
  readonly #recorder: LastKnownGoodRecorder;
  /** Set while Envoy is served from last-known-good config. */
  #lastKnownGoodSession: LastKnownGoodSession | undefined;
  /** The agent's name table subscription, with DNS on. */
  #nds: NdsSubscription | undefined;
  /** Remote Wasm conversion, when on. */
  #ecds: EcdsInterceptor | undefined;
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
    this.#requests = this.#requestReader();
    this.#responses = tapResponses({ mode, maxBytes: limits.responseBytes, recorder: this.#recorder, onResponse: (fields, bytes) => this.#onResponse(fields, bytes) });
  }

  get done(): Promise<TerminationReason> {
    return this.#done;
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
      this.#upstream = upstream;
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
    this.#relayResponses(this.#upstream);
    this.#relayRequests(this.#upstream);
    return this.#done;
  }

  /** Answers Envoy from the last-known-good config, redialling until the discovery server answers. */
  #serveLastKnownGood(reason: string): Promise<TerminationReason> {
    const { downstream } = this.#options;
    this.#lastKnownGoodSession = new LastKnownGoodSession({
      ...this.#options,
      send: (message) => void downstream.write(frame(message)),
      handover: (upstream) => {
        this.#options.keepForNextStream(upstream);
        this.#end({ reason: 'handed_over', status: GrpcStatus.UNAVAILABLE, details: 'the discovery server answers again: reconnect through the relay' });
      },
    });
    this.upstreamState = 'last-known-good';
    this.#call.respond();
    this.#lastKnownGoodSession.start(reason);
    this.#readRequests(() => undefined);
    return this.#done;
  }

  /** When Envoy is served from last-known-good config, since when (ms). */
  get lastKnownGoodSince(): number | undefined {
    return this.#lastKnownGoodSession?.since;
  }

  #relayRequests({ stream: upstream }: UpstreamStream): void {
    this.#readRequests(() => upstream.end());
  }

  #readRequests(onEnd: () => void): void {
    const { downstream } = this.#options;
    downstream.on('data', (chunk: Buffer) => {
      if (this.#ending) return;
      try {
        this.#requests.push(chunk);
      } catch (error) {
        const status = error instanceof FrameTooLarge ? GrpcStatus.RESOURCE_EXHAUSTED : GrpcStatus.INVALID_ARGUMENT;
        this.#end({ reason: 'bad_envoy_frame', status, details: `malformed request from Envoy: ${(error as Error).message}` });
      }
    });
    downstream.on('end', () => {
      if (this.#ending) return;
      if (!this.#requests.atBoundary) return this.#end({ reason: 'bad_envoy_frame', status: GrpcStatus.INVALID_ARGUMENT, details: 'malformed request from Envoy: stream ended inside a message' });
      onEnd();
    });
  }

  /** Whole requests: they are small, and the first may need the node added. */
  #requestReader(): GrpcFrameReader {
    let parts: Buffer[] = [];
    return new GrpcFrameReader({
      begin: () => (parts = []),
      data: (bytes) => parts.push(bytes),
      end: () => this.#onRequest(parts.length === 1 ? parts[0]! : Buffer.concat(parts)),
    }, this.#options.limits.requestBytes);
  }

  /** Throws WireError for a request that does not parse; the caller ends the stream. */
  #onRequest(request: Buffer): void {
    const fields = readRequest(request, this.mode);
    if (this.#lastKnownGoodSession) return this.#lastKnownGoodSession.request(fields);
    const message = this.#withNode(request, fields.node);
    const sent = this.#sent.get(fields.typeUrl);
    const acked = sent && fields.nonce === sent.nonce ? sent : undefined;
    this.#options.stats.request(fields, request.length, acked);
    if (acked && fields.error !== undefined) this.#options.logger.warn({ type: fields.typeUrl, version: acked.version, error: fields.error }, 'Envoy rejected a response (NACK)');
    const upstream = this.#upstream!.stream;
    if (!upstream.write(frame(message))) pauseUntilDrained(this.#options.downstream, upstream);
    this.#recorder.request(fields); // after the write: the ACK leaves first
    this.#nds?.envoyRequested(fields.typeUrl);
    this.#ecds?.envoyRequested(fields);
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

  #relayResponses({ stream: upstream }: UpstreamStream): void {
    const { nameTables, ecds, logger, limits } = this.#options;
    const passOn = (bytes: Buffer) => this.#passOn(bytes, upstream);
    if (nameTables) this.#nds = new NdsSubscription({ mode: this.mode, sink: nameTables, send: (request) => void upstream.write(frame(request)), forward: passOn, maxBytes: limits.responseBytes, logger });
    const afterEcds = (bytes: Buffer) => (this.#nds ? this.#nds.push(bytes) : passOn(bytes));
    const badFrame = (error: Error) => {
      this.#options.stats.upstreamFailure('BAD_FRAME');
      this.#end({ reason: 'bad_upstream_frame', status: GrpcStatus.UNAVAILABLE, details: `malformed response from the discovery server: ${error.message}` });
    };
    if (ecds) this.#ecds = new EcdsInterceptor({ mode: this.mode, convert: ecds, forward: (bytes) => !this.#ending && afterEcds(bytes), send: (request) => void upstream.write(frame(request)), failed: badFrame, maxBytes: limits.responseBytes, logger });
    upstream.on('response', (headers) => this.#onUpstreamHeaders(headers));
    upstream.on('data', (chunk: Buffer) => {
      if (this.#ending) return;
      try {
        if (this.#ecds) this.#ecds.push(chunk);
        else afterEcds(chunk);
      } catch (error) {
        return badFrame(error as Error);
      }
    });
    upstream.on('trailers', (trailers) => (this.#upstreamStatus = statusFromHeaders(trailers)));
    upstream.on('error', (error) => (this.#upstreamError = error));
    upstream.on('close', () => this.#onUpstreamClosed(upstream.rstCode));
  }

  /** Envoy's response bytes: read on the way (throws WireError when malformed), then written. */
  #passOn(bytes: Buffer, upstream: UpstreamStream['stream']): void {
    const { downstream } = this.#options;
    this.#responses.push(bytes);
    corkUntilNextTick(downstream);
    if (!downstream.write(bytes)) pauseUntilDrained(upstream, downstream);
  }

  #onResponse(fields: ResponseFields, bytes: number): void {
    this.#sent.set(fields.typeUrl, { version: fields.version, nonce: fields.nonce });
    this.#options.stats.response(fields, bytes);
    this.#options.logger.debug({ type: fields.typeUrl, version: fields.version, resources: fields.resources, bytes }, 'response relayed');
  }

  #onUpstreamHeaders(headers: IncomingHttpHeaders): void {
    if (this.#ending) return;
    const httpStatus = Number(headers[':status']);
    if (httpStatus !== 200) {
      this.#options.stats.upstreamFailure(`HTTP_${httpStatus}`);
      return this.#end({ reason: 'upstream_error', status: GrpcStatus.UNAVAILABLE, details: `discovery server answered HTTP ${httpStatus}` });
    }
    this.#upstreamStatus = statusFromHeaders(headers); // Trailers-Only: the call ends with no message
    if (this.#upstreamStatus) return;
    this.upstreamState = 'open';
    this.#call.respond();
  }

  #onUpstreamClosed(rstCode: number | undefined): void {
    if (this.#ending) return;
    const status = this.#upstreamStatus;
    const ended = (code: string, details: string) => {
      this.#options.stats.upstreamFailure(code);
      // UNAVAILABLE makes Envoy reconnect with backoff, which dials a fresh upstream.
      this.#end({ reason: 'upstream_error', status: GrpcStatus.UNAVAILABLE, details: `discovery server ended the stream: ${details}` });
    };
    if (!status) return ended('RESET', `reset (HTTP/2 code ${rstCode ?? 'none'}${this.#upstreamError ? `, ${this.#upstreamError.message}` : ''})`);
    if (!this.#responses.atBoundary || this.#nds?.atBoundary === false || this.#ecds?.atBoundary === false) return ended('TRUNCATED', 'it stopped inside a response');
    if (status.code !== GrpcStatus.OK) return ended(statusName(status.code), `${statusName(status.code)} ${status.message}`);
    this.#end({ reason: 'upstream_closed', status: GrpcStatus.UNAVAILABLE, details: 'discovery server ended the stream: OK' });
  }

  /** Ends both sides once, with the first reason. */
  #end(ending: Ending): void {
    if (this.#ending) return;
    this.#ending = ending;
    const level = ending.reason === 'envoy_closed' || ending.reason === 'relay_stopped' || ending.reason === 'handed_over' ? 'info' : 'warn';
    this.#options.logger[level]({ reason: ending.reason, details: ending.details }, 'xDS stream ended');
    if (this.#upstream) {
      this.#options.stats.upstreamClosed();
      this.#upstream.close();
    }
    this.#lastKnownGoodSession?.stop();
    this.#ecds?.close();
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
