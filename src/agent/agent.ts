import type { Clock, Timer } from '../shared/clock.ts';
import type { ErrorCode } from '../shared/errors.ts';
import type { Logger } from '../shared/log.ts';
import { shortHash } from '../shared/short-hash.ts';
import { waitOutDrain, type DrainPolicy } from './drain-wait.ts';
import type { LiveDetails, Proxy } from './proxy.ts';
import { initialState, reduce } from './reconcile.ts';
import type { Action, Event, RetryPolicy, State } from './reconcile-types.ts';

/** How the loop ended: cleanly, or with the error that says why (its code decides the exit number, errors.ts). */
export interface AgentExit {
  error?: ErrorCode;
  reason?: string;
}

export interface AgentOptions {
  proxy: Proxy;
  clock: Clock;
  logger: Logger;
  policy: RetryPolicy;
  /** How long a shutdown's drain waits; none when absent. */
  drain?: DrainPolicy;
}

/**
 * Runs the reconcile loop: feeds events to `reduce` and carries out the
 * actions. `exited` resolves with how the loop ended:
 * - cleanly after a shutdown (drain, then every epoch stopped), or when the
 *   only Envoy exited normally on its own;
 * - RETRY_BUDGET_SPENT when the retry budget is spent trying to reach the
 *   desired config and no older epoch still serves (exit 1);
 * - ENVOY_REJECTED when Envoy rejects its configuration with no other epoch
 *   running (exit 2).
 * An error comes with a one-line reason for stderr.
 */
export class Agent {
  readonly #options: AgentOptions;
  #state: State;
  readonly #epochs = new Map<number, AbortController>();
  readonly #running = new Set<Promise<void>>();
  readonly #timers = new Set<Timer>();
  #retryTimer: Timer | undefined;
  #drainController = new AbortController();
  /** What the last POST /drain's drain-early action gave (whether Envoy took it). */
  #earlyDrain: Promise<boolean> | undefined;
  /** Every epoch is gone after the exit: the loop takes no more events. */
  #ended = false;
  #resolveExit!: (result: AgentExit) => void;
  readonly #exited: Promise<AgentExit>;
  readonly #listeners = new Set<(event: Event, state: State) => void>();

  constructor(options: AgentOptions) {
    this.#options = options;
    this.#state = initialState(options.policy);
    this.#exited = new Promise((resolve) => (this.#resolveExit = resolve));
  }

  /** Resolves with the exit code (and reason) once the loop has ended. */
  get exited(): Promise<AgentExit> {
    return this.#exited;
  }

  get state(): State {
    return this.#state;
  }

  /** Observes every event after it was applied (status server, tests). */
  onEvent(listener: (event: Event, state: State) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  dispatch(event: Event): void {
    // A late event (a certificate change, the gate opening) must not start an Envoy after the exit.
    if (this.#ended) return;
    const [next, actions] = reduce(this.#state, event);
    this.#state = next;
    for (const listener of this.#listeners) listener(event, next);
    for (const action of actions) this.#perform(action);
  }

  #perform(action: Action): void {
    switch (action.type) {
      case 'start-epoch':
        return this.#startEpoch(action.epoch, action.config);
      case 'abort-epoch':
        return this.#epochs.get(action.epoch)?.abort();
      case 'remove-bootstrap':
        return void this.#options.proxy
          .cleanup(action.epoch)
          .catch((err: unknown) => this.#options.logger.warn({ err, epoch: action.epoch }, 'cannot remove bootstrap'));
      case 'schedule':
        return this.#schedule(action.event, action.delayMs);
      case 'cancel-retry':
        this.#retryTimer?.cancel();
        this.#retryTimer = undefined;
        return;
      case 'drain':
        return this.#drain();
      case 'drain-early':
        return this.#drainEarly();
      case 'cut-drain':
        return this.#drainController.abort();
      case 'drain-listeners':
        return void this.#options.proxy
          .drain({ signal: this.#drainController.signal })
          .catch((err: unknown) => this.#options.logger.warn({ err, epoch: action.epoch }, 'drain failed'));
      case 'log':
        return this.#options.logger[action.level](action.fields, action.message);
      case 'exit':
        return this.#exit({ error: action.error, reason: action.reason });
    }
  }

  #startEpoch(epoch: number, config: string): void {
    const controller = new AbortController();
    this.#epochs.set(epoch, controller);
    this.#options.logger.info({ epoch, config: shortHash(config) }, 'starting epoch');
    const onLive = (details?: LiveDetails) => {
      this.#options.logger.info({ epoch, ...details }, 'epoch live');
      this.dispatch({ type: 'epoch-live', epoch });
    };
    const onStarted = ({ pid }: { pid: number }) => this.dispatch({ type: 'epoch-spawned', epoch, pid });
    const running = this.#options.proxy.run(epoch, config, { signal: controller.signal, onLive, onStarted }).then((exit) => {
      this.#epochs.delete(epoch);
      this.#running.delete(running);
      this.dispatch({ type: 'epoch-exited', epoch, kind: exit.kind, detail: exit.detail });
    });
    this.#running.add(running);
  }

  #schedule(event: Event, delayMs: number): void {
    const timer = this.#options.clock.setTimeout(() => {
      this.#timers.delete(timer);
      if (this.#retryTimer === timer) this.#retryTimer = undefined;
      this.dispatch(event);
    }, delayMs);
    this.#timers.add(timer);
    if (event.type === 'retry-due') this.#retryTimer = timer;
  }

  /** Not cut by a later hurry: the caller of POST /drain learns whether Envoy took it. */
  #drainEarly(): void {
    this.#earlyDrain = this.#options.proxy
      .drain({ signal: new AbortController().signal, skipExit: true })
      .catch((err: unknown) => (this.#options.logger.warn({ err }, 'drain failed'), false));
  }

  #drain(): void {
    void this.#drainAndWait()
      .catch((err: unknown) => this.#options.logger.warn({ err }, 'drain failed; stopping anyway'))
      .then(() => this.dispatch({ type: 'drained' }));
  }

  /** Envoy drains its listeners, then open connections get their time; a hurry cuts the wait. */
  async #drainAndWait(): Promise<void> {
    const signal = this.#drainController.signal;
    // Already told to hurry (/quitquitquit, a second signal): stop without the admin calls.
    if (signal.aborted) return;
    const { proxy, clock, logger, drain: policy = { durationMs: 0 } } = this.#options;
    // Envoy's refusal is logged by the proxy; the wait still gives open connections their time.
    if (await proxy.drain({ signal })) {
      logger.info({ durationMs: policy.durationMs, exitOnZeroActiveConnections: Boolean(policy.exitOnZeroActiveConnections) }, 'draining listeners');
    }
    await waitOutDrain({ clock, logger, signal, policy, activeConnections: (aborted) => proxy.activeConnections(aborted) });
  }

  /**
   * POST /drain: Envoy drains now and for good; the shutdown that follows
   * skips its drain and the wait, as Istio's agent. Resolves whether Envoy took it.
   */
  requestDrain(): Promise<boolean> {
    this.#earlyDrain = undefined;
    this.dispatch({ type: 'drain-requested' });
    return this.#earlyDrain ?? Promise.resolve(false);
  }

  /** Stops every epoch now, without a drain (a fault, /quitquitquit, a start that failed part way); a no-op once ended. */
  stopNow(): void {
    this.dispatch({ type: 'hurry' });
    this.dispatch({ type: 'shutdown' });
  }

  /** `stopNow`, then resolves once every epoch is gone: a disposable stack's Envoy step. */
  async [Symbol.asyncDispose](): Promise<void> {
    this.stopNow();
    await this.#exited;
  }

  #exit(result: AgentExit): void {
    for (const timer of this.#timers) timer.cancel();
    this.#timers.clear();
    for (const controller of this.#epochs.values()) controller.abort();
    // No Envoy may outlive the agent: resolve only once every epoch is gone.
    void Promise.all(this.#running).then(() => {
      this.#ended = true;
      this.#resolveExit(result);
    });
  }
}
