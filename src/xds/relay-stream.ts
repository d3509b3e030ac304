import type { IncomingHttpHeaders, OutgoingHttpHeaders, ServerHttp2Stream } from 'node:http2';
import type { Logger } from '../shared/log.ts';
import { frame, FrameTooLarge, GrpcFrameReader } from './grpc-frame.ts';
import { encodeGrpcMessage, GrpcStatus, statusFromHeaders, statusName } from './grpc-status.ts';
import type { TerminationReason, XdsStats } from './stats.ts';
import type { UpstreamStream } from './upstream.ts';
import { readRequest, responseReader, withNode, type ResponseFields, type XdsMode } from './wire.ts';

export interface RelayLimits {
  /** Largest request from Envoy; requests are held whole to read them and maybe add the node. */
  requestBytes: number;
  /** Largest response from the discovery server; responses stream through, never held whole. */
  responseBytes: number;
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
}

/** How a relayed stream ended, and the status Envoy's stream is closed with. */
interface Ending {
  reason: TerminationReason;
  status: number;
  details: string;
}

const grpcHeaders = { ':status': 200, 'content-type': 'application/grpc' } as const;

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
  upstreamState: 'dialing' | 'open' = 'dialing';
  readonly #options: RelayStreamOptions;
  #upstream: UpstreamStream | undefined;
  #ending: Ending | undefined;
  /** What upstream's trailers (or Trailers-Only headers) said. */
  #upstreamStatus: { code: number; message: string } | undefined;
  #upstreamError: Error | undefined;
  #trailers: OutgoingHttpHeaders | undefined;
  #firstRequest = true;
  /** Per type: the last response sent, to tell which one a request answers. */
  readonly #sent = new Map<string, { version: string; nonce: string }>();
  readonly #requests: GrpcFrameReader;
  readonly #responses: GrpcFrameReader;
  readonly #done: Promise<TerminationReason>;
  #resolveDone!: (reason: TerminationReason) => void;

  constructor(options: RelayStreamOptions) {
    this.#options = options;
    this.id = options.id;
    this.mode = options.mode;
    this.#done = new Promise((resolve) => (this.#resolveDone = resolve));
    this.#requests = this.#requestReader();
    this.#responses = this.#responseReader();
  }

  get done(): Promise<TerminationReason> {
    return this.#done;
  }

  /** Dials upstream, then relays until either side ends. */
  async run(): Promise<TerminationReason> {
    const { downstream, stats } = this.#options;
    downstream.on('wantTrailers', () => downstream.sendTrailers(this.#trailers ?? { 'grpc-status': String(GrpcStatus.OK) }));
    downstream.on('error', () => undefined); // 'close' follows, and ends the relay
    downstream.on('close', () => this.#end({ reason: 'envoy_closed', status: GrpcStatus.CANCELLED, details: 'Envoy closed the stream' }));
    try {
      const upstream = await this.#options.dial();
      if (this.#ending) return (upstream.close(), this.#done);
      this.#upstream = upstream;
      stats.upstreamOpened();
    } catch (error) {
      stats.upstreamFailure('DIAL');
      this.#end({ reason: 'dial_failed', status: GrpcStatus.UNAVAILABLE, details: `cannot reach the discovery server: ${(error as Error).message}` });
      return this.#done;
    }
    this.#relayResponses(this.#upstream);
    this.#relayRequests(this.#upstream);
    return this.#done;
  }

  #relayRequests({ stream: upstream }: UpstreamStream): void {
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
      upstream.end();
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
    const message = this.#withNode(request, fields.node);
    const sent = this.#sent.get(fields.typeUrl);
    const acked = sent && fields.nonce === sent.nonce ? sent : undefined;
    this.#options.stats.request(fields, request.length, acked);
    if (acked && fields.error !== undefined) this.#options.logger.warn({ type: fields.typeUrl, version: acked.version, error: fields.error }, 'Envoy rejected a response (NACK)');
    const upstream = this.#upstream!.stream;
    if (!upstream.write(frame(message))) this.#pauseUntilDrained(this.#options.downstream, upstream);
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
    const { downstream } = this.#options;
    upstream.on('response', (headers) => this.#onUpstreamHeaders(headers));
    upstream.on('data', (chunk: Buffer) => {
      if (this.#ending) return;
      try {
        this.#responses.push(chunk);
      } catch (error) {
        this.#options.stats.upstreamFailure('BAD_FRAME');
        return this.#end({ reason: 'bad_upstream_frame', status: GrpcStatus.UNAVAILABLE, details: `malformed response from the discovery server: ${(error as Error).message}` });
      }
      this.#corkUntilNextTick(downstream);
      if (!downstream.write(chunk)) this.#pauseUntilDrained(upstream, downstream);
    });
    upstream.on('trailers', (trailers) => (this.#upstreamStatus = statusFromHeaders(trailers)));
    upstream.on('error', (error) => (this.#upstreamError = error));
    upstream.on('close', () => this.#onUpstreamClosed(upstream.rstCode));
  }

  /** Reads each response as it streams past; records it once its last byte is through. */
  #responseReader(): GrpcFrameReader {
    let current: (ReturnType<typeof responseReader> & { length: number }) | undefined;
    return new GrpcFrameReader({
      begin: (length) => (current = { ...responseReader(length, this.mode), length }),
      data: (bytes) => current!.scanner.push(bytes),
      end: () => {
        current!.scanner.finish();
        this.#onResponse(current!.fields, current!.length);
      },
    }, this.#options.limits.responseBytes);
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
    const { downstream } = this.#options;
    if (!downstream.closed && !downstream.destroyed) downstream.respond(grpcHeaders, { waitForTrailers: true });
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
    if (!this.#responses.atBoundary) return ended('TRUNCATED', 'it stopped inside a response');
    if (status.code !== GrpcStatus.OK) return ended(statusName(status.code), `${statusName(status.code)} ${status.message}`);
    this.#end({ reason: 'upstream_closed', status: GrpcStatus.UNAVAILABLE, details: 'discovery server ended the stream: OK' });
  }

  /** One socket read brings several DATA frames; they leave in one write, not one each. */
  #corkUntilNextTick(stream: ServerHttp2Stream): void {
    if (stream.writableCorked) return;
    stream.cork();
    process.nextTick(() => stream.uncork());
  }

  /** Stops reading `from` until `to` has flushed what it holds. */
  #pauseUntilDrained(from: NodeJS.ReadableStream, to: NodeJS.EventEmitter): void {
    from.pause();
    to.once('drain', () => from.resume());
  }

  /** Ends both sides once, with the first reason. */
  #end(ending: Ending): void {
    if (this.#ending) return;
    this.#ending = ending;
    const level = ending.reason === 'envoy_closed' || ending.reason === 'relay_stopped' ? 'info' : 'warn';
    this.#options.logger[level]({ reason: ending.reason, details: ending.details }, 'xDS stream ended');
    if (this.#upstream) {
      this.#options.stats.upstreamClosed();
      this.#upstream.close();
    }
    this.#finishDownstream(ending);
    this.#resolveDone(ending.reason);
  }

  /** Sends Envoy the status after whatever it has been sent already. */
  #finishDownstream({ status, details }: Ending): void {
    const { downstream } = this.#options;
    if (downstream.closed || downstream.destroyed) return;
    const trailers = { 'grpc-status': String(status), 'grpc-message': encodeGrpcMessage(details) };
    downstream.resume(); // later requests are read and dropped, so the stream can close
    if (!downstream.headersSent) return void downstream.respond({ ...grpcHeaders, ...trailers }, { endStream: true });
    this.#trailers = trailers;
    downstream.end();
  }

  /** Ends the stream because the relay is stopping. */
  stop(): void {
    this.#end({ reason: 'relay_stopped', status: GrpcStatus.UNAVAILABLE, details: 'the agent is stopping' });
  }
}
