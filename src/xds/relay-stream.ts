import { Metadata, status as Status, type ServerDuplexStream, type StatusObject } from '@grpc/grpc-js';
import type { Logger } from '../shared/log.ts';
import type { TerminationReason, XdsStats } from './stats.ts';
import type { UpstreamCall } from './upstream.ts';
import { readRequest, readResponse, withNode, WireError, type RequestFields, type XdsMode } from './wire.ts';

export type Downstream = ServerDuplexStream<Buffer, Buffer>;

export interface RelayStreamOptions {
  id: number;
  mode: XdsMode;
  downstream: Downstream;
  /** Opens the upstream call (reads certs and token); may reject. */
  dial: () => Promise<{ call: UpstreamCall; metadata: Metadata; close: () => void }>;
  stats: XdsStats;
  logger: Logger;
  /** The node of the last stream that carried one, for a first request without it. */
  node: { get(): Buffer | undefined; set(node: Buffer): void };
  /** Responses handed to Envoy's stream but not yet flushed before the relay stops reading upstream. */
  maxInFlight: number;
}

/** How a relayed stream ended, and the status Envoy's stream is closed with. */
interface Ending {
  reason: TerminationReason;
  status: Status;
  details: string;
}

/**
 * One Envoy stream and its own upstream stream, bytes passed through in order.
 * Responses are pulled from upstream only while fewer than `maxInFlight` are
 * waiting for Envoy, so a stalled Envoy holds back the server (HTTP/2 flow
 * control) instead of growing a queue here. Resolves when both sides are done.
 */
export class RelayStream {
  readonly id: number;
  readonly mode: XdsMode;
  readonly since = new Date();
  upstreamState: 'dialing' | 'open' = 'dialing';
  readonly #options: RelayStreamOptions;
  #upstream: { call: UpstreamCall; close: () => void } | undefined;
  #ending: Ending | undefined;
  #inFlight = 0;
  #reading = false;
  #firstRequest = true;
  /** Per type: the last response sent, to tell which one a request answers. */
  readonly #sent = new Map<string, { version: string; nonce: string }>();
  readonly #done: Promise<TerminationReason>;
  #resolveDone!: (reason: TerminationReason) => void;

  constructor(options: RelayStreamOptions) {
    this.#options = options;
    this.id = options.id;
    this.mode = options.mode;
    this.#done = new Promise((resolve) => (this.#resolveDone = resolve));
  }

  get done(): Promise<TerminationReason> {
    return this.#done;
  }

  /** Dials upstream, then relays until either side ends. */
  async run(): Promise<TerminationReason> {
    const { downstream } = this.#options;
    downstream.on('cancelled', () => this.#end({ reason: 'envoy_closed', status: Status.CANCELLED, details: 'Envoy closed the stream' }));
    downstream.on('error', () => this.#end({ reason: 'envoy_closed', status: Status.CANCELLED, details: 'Envoy stream failed' }));
    try {
      const upstream = await this.#options.dial();
      if (this.#ending) return (upstream.close(), this.#done);
      this.#upstream = upstream;
      this.#options.stats.upstreamOpened();
      this.#startUpstream(upstream.call, upstream.metadata);
    } catch (error) {
      this.#options.stats.upstreamFailure('DIAL');
      this.#end({ reason: 'dial_failed', status: Status.UNAVAILABLE, details: `cannot open upstream: ${(error as Error).message}` });
      return this.#done;
    }
    downstream.on('data', (request: Buffer) => this.#onRequest(request));
    downstream.on('end', () => this.#upstream?.call.halfClose());
    return this.#done;
  }

  #startUpstream(call: UpstreamCall, metadata: Metadata): void {
    call.start(metadata, {
      onReceiveMetadata: () => (this.upstreamState = 'open'),
      onReceiveMessage: (response: Buffer) => this.#onResponse(response),
      onReceiveStatus: (status: StatusObject) => this.#onUpstreamStatus(status),
    });
    this.#pull();
  }

  /** Asks upstream for one more response when Envoy is keeping up. */
  #pull(): void {
    if (this.#reading || this.#ending || this.#inFlight >= this.#options.maxInFlight || !this.#upstream) return;
    this.#reading = true;
    this.#upstream.call.startRead();
  }

  #onRequest(request: Buffer): void {
    let fields: RequestFields;
    try {
      fields = readRequest(request, this.mode);
    } catch (error) {
      return this.#end({ reason: 'bad_envoy_frame', status: Status.INVALID_ARGUMENT, details: `malformed request from Envoy: ${(error as WireError).message}` });
    }
    const message = this.#withNode(request, fields);
    const sent = this.#sent.get(fields.typeUrl);
    const acked = sent && fields.nonce === sent.nonce ? sent : undefined;
    this.#options.stats.request(fields, request.length, acked);
    if (acked && fields.error !== undefined) this.#options.logger.warn({ stream: this.id, type: fields.typeUrl, version: acked.version, error: fields.error }, 'Envoy rejected a response (NACK)');
    this.#upstream?.call.sendMessageWithContext({}, message);
  }

  /** Keeps the node of a first request, or adds the last known one when it is missing. */
  #withNode(request: Buffer, fields: RequestFields): Buffer {
    if (!this.#firstRequest) return request;
    this.#firstRequest = false;
    if (fields.node) {
      this.#options.node.set(Buffer.from(fields.node));
      return request;
    }
    const node = this.#options.node.get();
    return node ? withNode(request, node, this.mode) : request;
  }

  #onResponse(response: Buffer): void {
    this.#reading = false;
    if (this.#ending) return;
    let fields;
    try {
      fields = readResponse(response, this.mode);
    } catch (error) {
      return this.#end({ reason: 'bad_upstream_frame', status: Status.UNAVAILABLE, details: `malformed response from the discovery server: ${(error as WireError).message}` });
    }
    this.#sent.set(fields.typeUrl, { version: fields.version, nonce: fields.nonce });
    this.#options.stats.response(fields, response.length);
    this.#options.logger.debug({ stream: this.id, type: fields.typeUrl, version: fields.version, resources: fields.resources, bytes: response.length }, 'response relayed');
    this.#inFlight++;
    this.#options.downstream.write(response, () => {
      this.#inFlight--;
      this.#pull();
    });
    this.#pull();
  }

  #onUpstreamStatus(status: StatusObject): void {
    if (this.#ending) return;
    if (status.code !== Status.OK) this.#options.stats.upstreamFailure(Status[status.code] ?? String(status.code));
    const reason = status.code === Status.OK ? 'upstream_closed' : 'upstream_error';
    // UNAVAILABLE makes Envoy reconnect with backoff, which dials a fresh upstream.
    this.#end({ reason, status: Status.UNAVAILABLE, details: `discovery server ended the stream: ${Status[status.code]} ${status.details}` });
  }

  /** Ends both sides once, with the first reason. */
  #end(ending: Ending): void {
    if (this.#ending) return;
    this.#ending = ending;
    const level = ending.reason === 'envoy_closed' || ending.reason === 'relay_stopped' ? 'info' : 'warn';
    this.#options.logger[level]({ stream: this.id, reason: ending.reason, details: ending.details }, 'xDS stream ended');
    if (this.#upstream) this.#options.stats.upstreamClosed();
    this.#closeUpstream();
    const { downstream } = this.#options;
    if (!downstream.cancelled && !downstream.writableEnded) downstream.emit('error', { code: ending.status, details: ending.details, metadata: new Metadata() });
    this.#resolveDone(ending.reason);
  }

  #closeUpstream(): void {
    if (!this.#upstream) return;
    this.#upstream.call.cancelWithStatus(Status.CANCELLED, this.#ending?.details ?? 'relay stream ended');
    this.#upstream.close();
  }

  /** Ends the stream because the relay is stopping. */
  stop(): void {
    this.#end({ reason: 'relay_stopped', status: Status.UNAVAILABLE, details: 'the agent is stopping' });
  }
}
