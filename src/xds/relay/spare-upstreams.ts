import type { Clock, Timer } from '../../shared/clock.ts';
import type { Logger } from '../../shared/log.ts';
import type { UpstreamStream } from '../upstream/session.ts';
import type { XdsMode } from '../wire.ts';

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
  }

  /** The spare call for this mode while it is still open; one use only. */
  take(mode: XdsMode): Promise<UpstreamStream> | undefined {
    const spare = this.#spares.get(mode);
    if (!spare) return undefined;
    this.#spares.delete(mode);
    spare.expiry.cancel();
    const { stream } = spare.upstream;
    if (stream.closed || stream.destroyed) return void spare.upstream.close();
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
