import type { IncomingHttpHeaders } from 'node:http2';
import type { Logger } from '../../shared/log.ts';
import { frame, type GrpcFrameReader } from '../../grpc/grpc-frame.ts';
import { GrpcStatus, statusFromHeaders, statusName } from '../../grpc/grpc-status.ts';
import type { LastKnownGoodRecorder } from '../last-known-good/recorder.ts';
import type { UpstreamStream } from '../upstream/session.ts';
import type { RequestFields, ResponseFields, XdsMode } from '../../discovery/wire.ts';
import { EcdsInterceptor } from './ecds-interceptor.ts';
import type { EcdsConverter, HealthReportSource, NameTableSink } from '../../discovery/consumers.ts';
import { HealthForward } from './health-forward.ts';
import type { AdsStream } from './ads-stream.ts';
import type { Ending } from './ending.ts';
import { NdsSubscription } from './nds-subscription.ts';
import { tapResponses } from './response-tap.ts';
import type { XdsStats } from './stats.ts';
import { pauseUntilDrained } from './stream-flow.ts';

export interface ResponseLegOptions {
  mode: XdsMode;
  upstream: UpstreamStream['stream'];
  /** Envoy's call. */
  ads: AdsStream;
  /** Largest response from the discovery server. */
  maxBytes: number;
  recorder: LastKnownGoodRecorder;
  stats: XdsStats;
  logger: Logger;
  nameTables?: NameTableSink;
  ecds?: EcdsConverter;
  /** With a readinessProbe in ProxyConfig: the workload's health, reported upstream. */
  health?: HealthReportSource;
  /** True once the stream is ending: later bytes and events are dropped. */
  ending(): boolean;
  /** The discovery server answered the call: Envoy's response headers may go. */
  opened(): void;
  /** Ends the stream (both sides), with the first reason only. */
  end(ending: Ending): void;
  /**
   * The call was answered UNIMPLEMENTED: the server has no xDS of this flavour (Istio 1.1's Pilot has no Delta);
   * the agent starts Envoy on the other one. A Delta call ends `delta_unsupported`, a SotW call as an error.
   */
  unimplemented?(): void;
}

/**
 * The discovery server's half of one relayed stream. Responses pass through
 * the ECDS interceptor and the NDS subscription (when on), are read on their
 * way, and are written to Envoy chunk by chunk; upstream's headers,
 * trailers and close say how the stream ends.
 */
export class ResponseLeg {
  readonly #options: ResponseLegOptions;
  /** Per type: the last response sent, to tell which one a request answers. */
  readonly #sent = new Map<string, { version: string; nonce: string }>();
  readonly #responses: GrpcFrameReader;
  /** What upstream's trailers (or Trailers-Only headers) said. */
  #status: { code: number; message: string } | undefined;
  #error: Error | undefined;
  /** The agent's name table subscription, with DNS on. */
  #nds: NdsSubscription | undefined;
  /** Remote Wasm conversion, when on. */
  #ecds: EcdsInterceptor | undefined;
  /** The workload's health reports, with a readinessProbe. */
  #health: HealthForward | undefined;

  constructor(options: ResponseLegOptions) {
    this.#options = options;
    const { mode, maxBytes, recorder } = options;
    this.#responses = tapResponses({ mode, maxBytes, recorder, onResponse: (fields, bytes) => this.#onResponse(fields, bytes) });
    this.#listen();
  }

  /** The response a request acknowledges (or rejects): the last one of its type, when the nonce matches. */
  answered({ typeUrl, nonce }: RequestFields): { version: string; nonce: string } | undefined {
    const sent = this.#sent.get(typeUrl);
    return sent && nonce === sent.nonce ? sent : undefined;
  }

  /** Tells the agent's own subscriptions what Envoy asked for. */
  envoyRequested(fields: RequestFields): void {
    this.#nds?.envoyRequested(fields.typeUrl);
    this.#ecds?.envoyRequested(fields);
    this.#health?.envoyRequested(fields.typeUrl);
  }

  close(): void {
    this.#ecds?.close();
    this.#health?.stop();
  }

  #listen(): void {
    const { upstream, nameTables, ecds, health, logger, maxBytes, mode } = this.#options;
    const passOn = (bytes: Buffer) => this.#passOn(bytes);
    if (health) this.#health = new HealthForward({ mode, source: health, send: (request) => void upstream.write(frame(request)), logger });
    if (nameTables)
      this.#nds = new NdsSubscription({ mode, sink: nameTables, send: (request) => void upstream.write(frame(request)), forward: passOn, maxBytes, logger });
    const afterEcds = (bytes: Buffer) => (this.#nds ? this.#nds.push(bytes) : passOn(bytes));
    const badFrame = (error: Error) => this.#badFrame(error);
    if (ecds)
      this.#ecds = new EcdsInterceptor({
        mode,
        convert: ecds,
        forward: (bytes) => !this.#options.ending() && afterEcds(bytes),
        send: (request) => void upstream.write(frame(request)),
        failed: badFrame,
        maxBytes,
        logger,
      });
    upstream.on('response', (headers) => this.#onHeaders(headers));
    upstream.on('data', (chunk: Buffer) => {
      if (this.#options.ending()) return;
      try {
        if (this.#ecds) this.#ecds.push(chunk);
        else afterEcds(chunk);
      } catch (error) {
        return badFrame(error as Error);
      }
    });
    upstream.on('trailers', (trailers) => (this.#status = statusFromHeaders(trailers)));
    upstream.on('error', (error) => (this.#error = error));
    // The server's side ended (trailers, END_STREAM), after every byte before it was read: with no RST_STREAM after it, 'close' never comes.
    upstream.on('end', () => this.#onClosed(undefined, true));
    upstream.on('close', () => this.#onClosed(upstream.rstCode));
  }

  #badFrame(error: Error): void {
    this.#options.stats.upstreamFailure('BAD_FRAME');
    const details = `malformed response from the discovery server: ${error.message}`;
    this.#options.end({ reason: 'bad_upstream_frame', status: GrpcStatus.UNAVAILABLE, details });
  }

  /** Envoy's response bytes: read on the way (throws WireError when malformed), then written. */
  #passOn(bytes: Buffer): void {
    const { ads, upstream } = this.#options;
    this.#responses.push(bytes);
    if (!ads.send(bytes)) pauseUntilDrained(upstream, (then) => ads.drained(then));
  }

  #onResponse(fields: ResponseFields, bytes: number): void {
    this.#sent.set(fields.typeUrl, { version: fields.version, nonce: fields.nonce });
    this.#options.stats.response(fields, bytes);
    this.#options.logger.debug({ type: fields.typeUrl, version: fields.version, resources: fields.resources, bytes }, 'response relayed');
  }

  #onHeaders(headers: IncomingHttpHeaders): void {
    if (this.#options.ending()) return;
    const httpStatus = Number(headers[':status']);
    if (httpStatus !== 200) {
      this.#options.stats.upstreamFailure(`HTTP_${httpStatus}`);
      return this.#options.end({ reason: 'upstream_error', status: GrpcStatus.UNAVAILABLE, details: `discovery server answered HTTP ${httpStatus}` });
    }
    this.#status = statusFromHeaders(headers); // Trailers-Only: the call ends with no message
    if (this.#status) return;
    this.#options.opened();
  }

  #deltaUnimplemented(): void {
    this.#options.stats.upstreamFailure('UNIMPLEMENTED');
    this.#options.unimplemented?.();
    this.#options.end({ reason: 'delta_unsupported', status: GrpcStatus.UNAVAILABLE, details: 'the discovery server does not implement Delta xDS' });
  }

  /** `endStream`: the server ended its side; else the stream closed (both sides, or a reset). */
  #onClosed(rstCode: number | undefined, endStream = false): void {
    if (this.#options.ending()) return;
    const status = this.#status;
    const ended = (code: string, details: string) => {
      this.#options.stats.upstreamFailure(code);
      // UNAVAILABLE makes Envoy reconnect with backoff, which dials a fresh upstream.
      this.#options.end({ reason: 'upstream_error', status: GrpcStatus.UNAVAILABLE, details: `discovery server ended the stream: ${details}` });
    };
    if (!status && endStream) return ended('NO_STATUS', 'it ended its side without a status');
    if (!status) return ended('RESET', `reset (HTTP/2 code ${rstCode ?? 'none'}${this.#error ? `, ${this.#error.message}` : ''})`);
    if (!this.#responses.atBoundary || this.#nds?.atBoundary === false || this.#ecds?.atBoundary === false)
      return ended('TRUNCATED', 'it stopped inside a response');
    if (status.code === GrpcStatus.UNIMPLEMENTED && this.#options.unimplemented) {
      if (this.#options.mode === 'delta') return this.#deltaUnimplemented();
      this.#options.unimplemented();
    }
    if (status.code !== GrpcStatus.OK) return ended(statusName(status.code), `${statusName(status.code)} ${status.message}`);
    this.#options.end({ reason: 'upstream_closed', status: GrpcStatus.UNAVAILABLE, details: 'discovery server ended the stream: OK' });
  }
}
