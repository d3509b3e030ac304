import type { Logger } from '../../shared/log.ts';
import { healthInfoType, listenerType } from '../../discovery/type-urls.ts';
import { encodeHealthReport, type XdsMode } from '../../discovery/wire.ts';
import type { HealthReport, HealthReportSource } from '../../discovery/consumers.ts';

export interface HealthForwardOptions {
  mode: XdsMode;
  source: HealthReportSource;
  /** Writes a request message (unframed) on the upstream stream. */
  send(request: Buffer): void;
  logger: Logger;
}

/**
 * The workload's health reports on one upstream stream, as Istio's xDS proxy
 * sends them: none before Envoy asked for listeners (istiod knows the proxy
 * by then), then the last report at once (so a reconnect repeats it to the
 * new connection) and every later one as it comes.
 */
export class HealthForward {
  readonly #options: HealthForwardOptions;
  readonly #unsubscribe: () => void;
  #armed = false;

  constructor(options: HealthForwardOptions) {
    this.#options = options;
    this.#unsubscribe = options.source.subscribe((report) => {
      if (this.#armed) this.#send(report);
    });
  }

  /** Called after each of Envoy's requests went upstream. */
  envoyRequested(typeUrl: string): void {
    if (this.#armed || typeUrl !== listenerType) return;
    this.#armed = true;
    const current = this.#options.source.current();
    if (current) this.#send(current);
  }

  stop(): void {
    this.#unsubscribe();
  }

  #send(report: HealthReport): void {
    const { mode, send, logger } = this.#options;
    send(encodeHealthReport(mode, healthInfoType, report.healthy ? undefined : report.message));
    logger.debug({ healthy: report.healthy }, 'health report sent to the discovery server');
  }
}
