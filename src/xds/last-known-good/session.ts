import { Backoff, type BackoffPolicy, type RandomSource } from '../../shared/backoff.ts';
import type { Clock } from '../../shared/clock.ts';
import type { Logger } from '../../shared/log.ts';
import type { LastKnownGoodConfig } from './config.ts';
import { LastKnownGoodAnswers, type LastKnownGoodOutcome } from './serve.ts';
import type { XdsStats } from '../relay/stats.ts';
import type { UpstreamStream } from '../upstream/session.ts';
import type { RequestFields, XdsMode } from '../../discovery/wire.ts';

export interface LastKnownGoodSessionOptions {
  id: number;
  mode: XdsMode;
  lastKnownGood: LastKnownGoodConfig;
  clock: Clock;
  logger: Logger;
  stats: XdsStats;
  /** Writes one framed message to Envoy. */
  send(message: Buffer): void;
  dial(): Promise<UpstreamStream>;
  /**
   * The discovery server answers again: end Envoy's stream so it reconnects
   * through the relay, which gives the new stream this upstream call, so a
   * recovering server pays one connection (one TLS handshake) per reconnect.
   */
  handover(upstream: UpstreamStream): void;
  backoff: BackoffPolicy;
  /** Jitter for the redials (Math.random when absent). */
  random?: RandomSource;
  reachable(ok: boolean): void;
}

/**
 * An Envoy stream served from the last-known-good config while the discovery server is
 * unreachable, and the upstream dialled again with backoff until it answers.
 */
export class LastKnownGoodSession {
  readonly since: number;
  readonly #options: LastKnownGoodSessionOptions;
  readonly #answers: LastKnownGoodAnswers;
  readonly #stopped = new AbortController();

  constructor(options: LastKnownGoodSessionOptions) {
    this.#options = options;
    this.since = options.clock.now();
    this.#answers = new LastKnownGoodAnswers(options.mode, options.lastKnownGood, `lkg-${options.id}-${this.since}`);
  }

  start(reason: string): void {
    const { logger, stats, mode } = this.#options;
    logger.warn(
      { stream: this.#options.id, mode, since: new Date(this.since).toISOString(), reason },
      'serving last-known-good config: the discovery server cannot be reached',
    );
    stats.lastKnownGoodStreamOpened();
    void this.#probe();
  }

  request(fields: RequestFields): void {
    const outcome = this.#answers.answer(fields);
    if (outcome.kind === 'send') this.#options.send(outcome.message);
    this.#report(outcome);
  }

  #report(outcome: LastKnownGoodOutcome): void {
    const { logger, stats } = this.#options;
    const fields = { stream: this.#options.id, type: outcome.typeUrl, version: outcome.version };
    if (outcome.kind === 'send') {
      stats.lastKnownGoodResponse(outcome.typeUrl, outcome.message.length);
      logger.info({ ...fields, resources: outcome.resources }, 'sent a last-known-good response');
    } else if (outcome.kind === 'nack') {
      stats.lastKnownGoodNack(outcome.typeUrl);
      logger.warn({ ...fields, error: outcome.error }, 'Envoy rejected a last-known-good response (NACK)');
    } else if (outcome.kind === 'missing') {
      logger.warn(fields, 'nothing kept for a type Envoy asks for; it waits for the discovery server');
    }
  }

  async #probe(): Promise<void> {
    const { clock, logger } = this.#options;
    const signal = this.#stopped.signal;
    const backoff = new Backoff(this.#options.backoff, this.#options.random);
    while (!signal.aborted) {
      const slept = await clock.sleep(backoff.next(), signal).then(() => true, () => false);
      if (!slept || signal.aborted) return; // a clock that ignores the signal still stops here
      const upstream = await this.#options.dial().catch(() => undefined);
      this.#options.reachable(upstream !== undefined);
      if (!upstream) continue;
      if (signal.aborted) return upstream.close();
      logger.info({ stream: this.#options.id, servedForMs: clock.now() - this.since }, 'the discovery server answers again; handing the stream over');
      return this.#options.handover(upstream);
    }
  }

  /** The stream ended: stop dialling. */
  stop(): void {
    if (this.#stopped.signal.aborted) return;
    this.#stopped.abort();
    this.#options.stats.lastKnownGoodStreamClosed();
  }
}
