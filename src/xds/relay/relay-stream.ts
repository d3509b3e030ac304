import type { Logger } from '../../shared/log.ts';
import type { UpstreamCredential } from '../upstream/credentials.ts';
import { frame } from '../../grpc/grpc-frame.ts';
import { GrpcStatus } from '../../grpc/grpc-status.ts';
import { LastKnownGoodRecorder } from '../last-known-good/recorder.ts';
import { LastKnownGoodSession } from '../last-known-good/session.ts';
import type { AdsStream } from './ads-stream.ts';
import { readRequests } from './request-leg.ts';
import { endings, type Ending, type TerminationReason } from './ending.ts';
import type { RelayContext } from './relay-context.ts';
import { ResponseLeg } from './response-leg.ts';
import { pauseUntilDrained } from './stream-flow.ts';
import type { UpstreamStream } from '../upstream/session.ts';
import { readRequest, withNode, type XdsMode } from '../../discovery/wire.ts';

export interface RelayStreamOptions {
  id: number;
  mode: XdsMode;
  /** Envoy's call. */
  ads: AdsStream;
  context: RelayContext;
  logger: Logger;
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
  readonly #ads: AdsStream;
  readonly #context: RelayContext;
  readonly #logger: Logger;
  #phase: Phase = { name: 'dialing' };
  /** The first reason the stream ends with; set once. */
  #ending: Ending | undefined;
  #firstRequest = true;
  readonly #recorder: LastKnownGoodRecorder;
  readonly #done: Promise<TerminationReason>;
  #resolveDone!: (reason: TerminationReason) => void;

  constructor({ id, mode, ads, context, logger }: RelayStreamOptions) {
    this.id = id;
    this.mode = mode;
    this.#ads = ads;
    this.#context = context;
    this.#logger = logger;
    this.#done = new Promise((resolve) => (this.#resolveDone = resolve));
    const { lastKnownGood, clock, limits } = context;
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
    const context = this.#context;
    const closed = () => this.#end({ reason: 'envoy_closed', status: GrpcStatus.CANCELLED, details: 'Envoy closed the stream' });
    if (this.#ads.signal.aborted) closed();
    else this.#ads.signal.addEventListener('abort', closed, { once: true });
    // A dial may take the 10 s connect limit; a new Envoy should not wait that out again.
    if (context.lastDialFailed() && context.lastKnownGood.has(this.mode)) return this.#serveLastKnownGood('the last dial failed; redialling in the background');
    try {
      const upstream = await context.dial(this.mode, this.#logger);
      if (this.#ending) return (upstream.close(), this.#done);
      this.#phase = { name: 'relaying', upstream, responses: this.#responseLeg(upstream), open: false };
      this.upstreamCredential = upstream.credential;
      context.stats.upstreamOpened();
      context.dialed(true);
    } catch (error) {
      return this.#dialFailed(error as Error);
    }
    const { stream: upstream } = this.#phase.upstream;
    this.#readRequests(() => (upstream.end(), this.#envoyFinished()));
    return this.#done;
  }

  #dialFailed(error: Error): Promise<TerminationReason> {
    this.#context.stats.upstreamFailure('DIAL');
    this.#context.dialed(false);
    const details = `cannot reach the discovery server: ${error.message}`;
    if (this.#context.lastKnownGood.has(this.mode) && !this.#ending) return this.#serveLastKnownGood(details);
    this.#end({ reason: 'dial_failed', status: GrpcStatus.UNAVAILABLE, details });
    return this.#done;
  }

  /** Answers Envoy from the last-known-good config, redialling until the discovery server answers. */
  #serveLastKnownGood(reason: string): Promise<TerminationReason> {
    const context = this.#context;
    const session = new LastKnownGoodSession({
      ...context,
      id: this.id,
      mode: this.mode,
      logger: this.#logger,
      send: (message) => void this.#ads.send(frame(message)),
      dial: () => context.dial(this.mode, this.#logger),
      reachable: (ok) => context.dialed(ok),
      handover: (upstream) => {
        context.keepSpare(this.mode, upstream);
        this.#end({ reason: 'handed_over', status: GrpcStatus.UNAVAILABLE, details: 'the discovery server answers again: reconnect through the relay' });
      },
    });
    this.#phase = { name: 'last-known-good', session };
    this.#ads.open();
    session.start(reason);
    this.#readRequests(() => this.#envoyFinished());
    return this.#done;
  }

  #responseLeg({ stream: upstream }: UpstreamStream): ResponseLeg {
    const { limits, stats, nameTables, ecds, health } = this.#context;
    return new ResponseLeg({
      mode: this.mode, upstream, ads: this.#ads, maxBytes: limits.responseBytes, recorder: this.#recorder, stats, logger: this.#logger,
      nameTables, ecds, health,
      unimplemented: () => this.#context.unimplemented(this.mode),
      ending: () => this.#ending !== undefined,
      opened: () => {
        if (this.#phase.name === 'relaying') this.#phase.open = true;
        this.#ads.open();
      },
      end: (ending) => this.#end(ending),
    });
  }

  #readRequests(finished: () => void): void {
    readRequests({
      ads: this.#ads,
      maxBytes: this.#context.limits.requestBytes,
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
    this.#context.stats.request(fields, request.length, acked);
    if (acked && fields.error !== undefined)
      this.#logger.warn({ type: fields.typeUrl, version: acked.version, error: fields.error }, 'Envoy rejected a response (NACK)');
    const upstream = phase.upstream.stream;
    if (!upstream.write(frame(message))) pauseUntilDrained(this.#ads, (then) => upstream.once('drain', then));
    this.#recorder.request(fields); // after the write: the ACK leaves first
    phase.responses.envoyRequested(fields);
  }

  /** Keeps the node of a first request, or adds the last known one when it is missing. */
  #withNode(request: Buffer, node: Buffer | undefined): Buffer {
    if (!this.#firstRequest) return request;
    this.#firstRequest = false;
    if (node) {
      this.#context.node.set(Buffer.from(node));
      return request;
    }
    const known = this.#context.node.get();
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

  /** Ends both sides once, with the first reason; Envoy gets the status after whatever it has been sent already. */
  #end(ending: Ending): void {
    if (this.#ending) return;
    this.#ending = ending;
    const level = endings[ending.reason].expected ? 'info' : 'warn';
    this.#logger[level]({ reason: ending.reason, details: ending.details }, 'xDS stream ended');
    const phase = this.#phase;
    if (phase.name === 'relaying') {
      this.#context.stats.upstreamClosed();
      phase.upstream.close();
      phase.responses.close();
    }
    if (phase.name === 'last-known-good') phase.session.stop();
    this.#ads.finish(ending.status, ending.details);
    this.#resolveDone(ending.reason);
  }

  /** Ends the stream because the relay is stopping. */
  stop(): void {
    this.#end({ reason: 'relay_stopped', status: GrpcStatus.UNAVAILABLE, details: 'the agent is stopping' });
  }
}
