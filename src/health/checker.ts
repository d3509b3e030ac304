import type { HealthReport } from '../discovery/consumers.ts';
import type { Clock, Timer } from '../shared/clock.ts';
import type { Logger } from '../shared/log.ts';
import type { HealthProbeConfig } from './probe-config.ts';

export interface HealthCheckerOptions {
  config: HealthProbeConfig;
  /** One run of the configured probe: undefined when it passed, else why not. Never rejects. */
  probe(): Promise<string | undefined>;
  /** Envoy's readiness, asked first as Istio's EnvoyProber: undefined when ready, else why not. */
  envoyReady?(): Promise<string | undefined>;
  /** A change of verdict: healthy, or unhealthy with the reason. */
  report(report: HealthReport): void;
  clock: Clock;
  logger: Logger;
}

/**
 * Istio's workload health checker (pkg/istio-agent/health): after the
 * initial delay, one check at once and one every period; `successThreshold`
 * passes in a row make it healthy, `failureThreshold` failures in a row
 * unhealthy, and only a change of verdict is reported.
 */
export class HealthChecker implements AsyncDisposable {
  readonly #options: HealthCheckerOptions;
  #timer: Timer | undefined;
  #stopped = false;
  #passes = 0;
  #failures = 0;
  #last: boolean | undefined;

  constructor(options: HealthCheckerOptions) {
    this.#options = options;
  }

  start(): void {
    const { config, logger } = this.#options;
    logger.info({ kind: config.action.kind, initialDelayMs: config.initialDelayMs, periodMs: config.periodMs }, 'workload health checks start');
    this.#arm(config.initialDelayMs);
  }

  stop(): void {
    this.#stopped = true;
    this.#timer?.cancel();
  }

  /** A recipe's stack stops it. */
  async [Symbol.asyncDispose](): Promise<void> {
    this.stop();
  }

  #arm(ms: number): void {
    if (this.#stopped) return;
    this.#timer = this.#options.clock.setTimeout(() => void this.#check().then(() => this.#arm(this.#options.config.periodMs)), ms);
  }

  async #check(): Promise<void> {
    const problem = (await this.#options.envoyReady?.()) ?? (await this.#options.probe());
    if (this.#stopped) return;
    if (problem === undefined) this.#passed();
    else this.#failed(problem);
  }

  #passed(): void {
    this.#failures = 0;
    if (++this.#passes < this.#options.config.successThreshold || this.#last === true) return;
    this.#passes = 0;
    this.#last = true;
    this.#options.logger.info('workload healthy: success threshold reached');
    this.#options.report({ healthy: true });
  }

  #failed(problem: string): void {
    this.#passes = 0;
    if (++this.#failures < this.#options.config.failureThreshold || this.#last === false) return;
    this.#failures = 0;
    this.#last = false;
    // Info, as Istio's: Envoy draining at a shutdown fails the check too, and that is no fault.
    this.#options.logger.info({ reason: problem }, 'workload unhealthy: failure threshold reached');
    this.#options.report({ healthy: false, message: problem });
  }
}
