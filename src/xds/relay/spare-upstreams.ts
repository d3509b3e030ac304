import type { Clock, Timer } from '../../shared/clock.ts';
import type { Logger } from '../../shared/log.ts';
import type { UpstreamStream } from '../upstream/session.ts';
import type { XdsMode } from '../../discovery/wire.ts';

/**
 * How long a redial that reached the server waits for the Envoy stream it
 * was made for. Envoy reconnects within its first backoff step (≤ 1 s).
 */
const spareTtlMs = 10_000;

/**
 * Per mode: an upstream call a redial opened while Envoy was served from
 * the last-known-good config, kept for the next Envoy stream of that mode.
 */
export class SpareUpstreams {
  readonly #spares = new Map<XdsMode, { upstream: UpstreamStream; expiry: Timer }>();
  readonly #clock: Clock;
  readonly #logger: Logger;

  constructor(clock: Clock, logger: Logger) {
    this.#clock = clock;
    this.#logger = logger;
  }

  /** Keeps `upstream` for the next stream of `mode`, closing the one kept before. */
  keep(mode: XdsMode, upstream: UpstreamStream): void {
    this.drop(mode);
    const expiry = this.#clock.setTimeout(() => this.drop(mode), spareTtlMs);
    this.#spares.set(mode, { upstream, expiry });
    this.#dropWhenDead(mode, upstream);
  }

  /**
   * A spare the server ends (trailers, a trailers-only error, a reset) or
   * whose connection goes away is dropped at once: handed to Envoy's next
   * stream, it would end that stream with nothing sent.
   */
  #dropWhenDead(mode: XdsMode, upstream: UpstreamStream): void {
    const dead = () => {
      if (this.#spares.get(mode)?.upstream === upstream) this.drop(mode);
    };
    const { stream } = upstream;
    stream.once('close', dead);
    stream.once('trailers', dead);
    stream.on('error', dead);
    stream.once('response', (headers: Record<string, unknown>) => void (headers['grpc-status'] !== undefined && dead()));
    stream.session?.once('goaway', dead);
    stream.session?.once('close', dead);
  }

  /** The spare call for this mode while it is still open; one use only. */
  take(mode: XdsMode): Promise<UpstreamStream> | undefined {
    const spare = this.#spares.get(mode);
    if (!spare) return undefined;
    this.#spares.delete(mode);
    spare.expiry.cancel();
    const { stream } = spare.upstream;
    if (stream.closed || stream.destroyed || stream.session?.closed || stream.session?.destroyed) return void spare.upstream.close();
    this.#logger.debug({ mode }, 'a new stream takes the connection the redial opened');
    return Promise.resolve(spare.upstream);
  }

  drop(mode: XdsMode): void {
    const spare = this.#spares.get(mode);
    if (!spare) return;
    this.#spares.delete(mode);
    spare.expiry.cancel();
    spare.upstream.close();
  }

  dropAll(): void {
    for (const mode of [...this.#spares.keys()]) this.drop(mode);
  }
}
