import type { Clock, Timer } from '../shared/clock.ts';
import type { Event, State } from './reconcile-types.ts';

/** What the gate asks the xDS relay. */
export interface XdsReadiness {
  /** Whether a new Envoy would get config now (upstream reachable, or last-known-good config for what Envoy needs). */
  canConfigure(): boolean;
  onGateChange(listener: (open: boolean) => void): () => void;
}

export interface RestartGateOptions {
  xds: XdsReadiness;
  clock: Clock;
  dispatch(event: Event): void;
  state(): State;
  /** The leaf certificate's notAfter (ms) of the files as they are now; undefined when unknown. */
  readNotAfter(): number | undefined;
  /** How long before the running certificate expires a held restart goes ahead anyway. */
  expiryMarginMs: number;
}

/** Ten minutes: far more than a hot restart takes, a small share of a 24 h certificate. */
export const defaultExpiryMarginMs = 10 * 60_000;

/**
 * Decides the reconcile loop's restart gate. Rule: a hot restart for a new
 * certificate waits while the discovery server cannot be reached and no
 * last-known-good config covers the types Envoy asked for, since the new
 * epoch would take the sockets over with only its static listeners. It goes
 * ahead anyway once the running epoch's certificate is within the margin of
 * expiring: an expired certificate fails every mTLS connection, so a new
 * epoch without xDS config is no worse, and it gets config once the
 * discovery server is back.
 */
export class RestartGate {
  readonly #options: RestartGateOptions;
  /** Per desired config (hash of the cert files): its certificate's notAfter. */
  readonly #notAfter = new Map<string, number>();
  #open = true;
  #expiryTimer: Timer | undefined;
  #unsubscribe: (() => void) | undefined;

  constructor(options: RestartGateOptions) {
    this.#options = options;
  }

  start(): void {
    this.#unsubscribe = this.#options.xds.onGateChange(() => this.evaluate());
    this.evaluate();
  }

  /**
   * New certificate files (before the reconcile loop hears of them): remember
   * when they expire, and look again at the running one's expiry timer.
   */
  certsChanged(config: string): void {
    const notAfter = this.#options.readNotAfter();
    if (notAfter !== undefined) this.#notAfter.set(config, notAfter);
    this.evaluate();
  }

  /** Tells the reconcile loop when the gate opens or closes. */
  evaluate(): void {
    const verdict = this.#verdict();
    if (verdict.open === this.#open) return;
    this.#open = verdict.open;
    this.#options.dispatch({ type: 'gate-changed', open: verdict.open, reason: verdict.reason });
  }

  #verdict(): { open: boolean; reason: string } {
    const { xds, clock, expiryMarginMs } = this.#options;
    if (xds.canConfigure()) return { open: true, reason: 'a new Envoy gets config: the discovery server is reachable or last-known-good config covers it' };
    const running = this.#options.state().current;
    const notAfter = running === undefined ? undefined : this.#notAfter.get(running);
    if (notAfter !== undefined && clock.now() >= notAfter - expiryMarginMs) {
      return { open: true, reason: `the running certificate expires at ${new Date(notAfter).toISOString()}: a restart without xDS config is no worse` };
    }
    if (notAfter !== undefined) this.#wakeAt(notAfter - expiryMarginMs);
    return { open: false, reason: 'the discovery server cannot be reached and no last-known-good config covers what Envoy needs' };
  }

  #wakeAt(at: number): void {
    this.#expiryTimer?.cancel();
    this.#expiryTimer = this.#options.clock.setTimeout(() => this.evaluate(), Math.max(0, at - this.#options.clock.now()));
  }

  stop(): void {
    this.#expiryTimer?.cancel();
    this.#unsubscribe?.();
  }
}
