import type { Logger } from '../../shared/log.ts';
import { GrpcFrameReader, frame } from '../../grpc/grpc-frame.ts';
import { HeldResponse, typePaths, type Path } from './held-response.ts';
import { extensionConfigType } from '../../discovery/type-urls.ts';
import { encodeAck, type RequestFields, type XdsMode } from '../../discovery/wire.ts';
import type { EcdsConverter, EcdsOutcome } from '../../discovery/consumers.ts';

export interface EcdsInterceptorOptions {
  mode: XdsMode;
  /** Bytes for the next stage (prefixes included), in order. */
  forward(bytes: Buffer): void;
  convert: EcdsConverter;
  /** Writes a request (unframed) upstream: the agent's NACK. */
  send(request: Buffer): void;
  /** A failure of the next stage on converted bytes ends the stream as a malformed response would. */
  failed(error: Error): void;
  maxBytes: number;
  logger: Logger;
}

/**
 * Takes ECDS responses out of the upstream byte stream so the agent can
 * rewrite remote Wasm code into a local file before Envoy sees it. Until
 * Envoy has asked for ECDS on the stream, every chunk passes as it came;
 * after that, a response is held only until its type shows, and only ECDS
 * responses are held whole. They are converted one after another and
 * released in order at the next message boundary, while other types pass
 * (Envoy waits for the filter by itself, as it does with Istio's agent).
 */
export class EcdsInterceptor {
  readonly #options: EcdsInterceptorOptions;
  readonly #reader: GrpcFrameReader;
  #armed = false;
  #state: 'forward' | 'sniff' | 'capture' = 'forward';
  readonly #response = new HeldResponse();
  /** Converted responses waiting for a message boundary. */
  #ready: Buffer[] = [];
  #queue: Promise<void> = Promise.resolve();
  #pending = 0;
  /** Per push: what was emitted, and whether it is exactly the chunk. */
  #emitted: Buffer[] = [];
  #emittedBytes = 0;
  #reassembled = false;
  /** Envoy's last ECDS request: the names and version the agent's NACK repeats. */
  #lastRequest: { names: string[]; version: string } = { names: [], version: '' };
  #closed = false;

  constructor(options: EcdsInterceptorOptions) {
    this.#options = options;
    const path = typePaths[options.mode];
    this.#reader = new GrpcFrameReader({
      begin: (length) => {
        const prefix = this.#response.begin(length);
        if (!this.#armed) {
          this.#state = 'forward';
          this.#response.release();
          return this.#emit(prefix);
        }
        this.#state = 'sniff';
      },
      data: (bytes) => {
        if (this.#state === 'forward') return this.#emit(bytes);
        this.#response.add(bytes);
        if (this.#state === 'sniff') this.#sniff(path, false);
      },
      end: () => {
        if (this.#state === 'sniff') this.#sniff(path, true);
        if (this.#state === 'capture') this.#capture(this.#response.message());
        this.#response.release();
        this.#state = 'forward';
        this.#release();
      },
    }, options.maxBytes);
  }

  /** True between messages with nothing waiting: the upstream may end here. */
  get atBoundary(): boolean {
    return this.#reader.atBoundary;
  }

  /** Conversions not yet released to Envoy. */
  get pending(): number {
    return this.#pending + this.#ready.length;
  }

  /** Called with each of Envoy's requests: ECDS ones arm the interceptor and are remembered for a NACK. */
  envoyRequested(fields: RequestFields): void {
    if (fields.typeUrl !== extensionConfigType) return;
    this.#armed = true;
    if (fields.names.length || this.#options.mode === 'sotw') this.#lastRequest = { names: fields.names, version: fields.versionInfo };
  }

  /** Throws WireError on a malformed frame, as the relay's own reader would. */
  push(chunk: Buffer): void {
    this.#emitted = [];
    this.#emittedBytes = 0;
    this.#reassembled = false;
    this.#reader.push(chunk);
    const exact = !this.#reassembled && this.#emittedBytes === chunk.length;
    const out = this.#emitted;
    this.#emitted = [];
    if (exact) return this.#options.forward(chunk);
    for (const bytes of out) this.#options.forward(bytes);
  }

  /** The stream ended: conversions still running are dropped. */
  close(): void {
    this.#closed = true;
  }

  #emit(bytes: Buffer): void {
    this.#emitted.push(bytes);
    this.#emittedBytes += bytes.length;
  }

  #sniff(path: Path, whole: boolean): void {
    const verdict = this.#response.sniff(path, extensionConfigType, whole);
    if (verdict === 'wait') return;
    this.#state = verdict;
    if (verdict === 'capture') return;
    this.#reassembled = true;
    // Prefix and the bytes so far as two pieces: no second copy of what was held.
    for (const part of this.#response.release()) this.#emit(part);
  }

  #capture(message: Buffer): void {
    this.#reassembled = true;
    this.#pending++;
    this.#queue = this.#queue.then(async () => {
      const outcome = await this.#options.convert(message, this.#options.mode);
      this.#pending--;
      if (this.#closed) return;
      if ('nack' in outcome) return this.#nack(outcome);
      this.#ready.push(outcome.message ? frame(outcome.message) : frame(message));
      if (this.#reader.atBoundary) this.#releaseNow();
    });
  }

  /** Inside a push: converted responses join this push's output, at the boundary just reached. */
  #release(): void {
    for (const bytes of this.#ready.splice(0)) this.#emit(bytes);
  }

  /** Outside a push (a conversion finished while the stream was between messages). */
  #releaseNow(): void {
    try {
      for (const bytes of this.#ready.splice(0)) this.#options.forward(bytes);
    } catch (error) {
      this.#options.failed(error as Error);
    }
  }

  /** The agent's NACK, as Envoy would send it, with Envoy's last ECDS subscription. */
  #nack({ nack, nonce }: { nack: string; nonce: string }): void {
    const { mode, logger } = this.#options;
    logger.warn({ type: extensionConfigType, error: nack }, 'ECDS response rejected by the agent (NACK)');
    this.#options.send(encodeAck(mode, { typeUrl: extensionConfigType, ...this.#lastRequest, nonce }, nack));
  }
}
