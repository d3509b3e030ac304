import type { ExitKind } from './reconcile-types.ts';
import type { Proxy, ProxyExit, RunOptions } from './proxy.ts';

interface FakeEpoch {
  epoch: number;
  config: string;
  options: RunOptions;
  resolve: (exit: ProxyExit) => void;
  done: boolean;
}

export interface FakeProxyOptions {
  /**
   * Behave like Envoy on its own: an epoch is LIVE on the next turn of the
   * event loop, and a parent exits normally once its child is LIVE. Off, the
   * test moves every epoch by hand with `live` and `exit`.
   */
  auto?: boolean;
}

/** A `Proxy` without processes, for the interpreter's tests and the shared contract. */
export class FakeProxy implements Proxy {
  readonly #auto: boolean;
  readonly #epochs = new Map<number, FakeEpoch>();
  /** Every start, in order: what the agent asked for. */
  readonly starts: { epoch: number; config: string }[] = [];
  readonly cleaned: number[] = [];
  /** The skipExit of every drain call, in order (POST /drain's are true). */
  readonly drains: boolean[] = [];
  /** What activeConnections answers, one count per call (then: cannot tell). */
  readonly connections: number[] = [];
  /** Whether Envoy takes a drain (false: admin refused it). */
  drainTaken = true;

  constructor(options: FakeProxyOptions = {}) {
    this.#auto = options.auto ?? false;
  }

  run(epoch: number, config: string, options: RunOptions): Promise<ProxyExit> {
    this.starts.push({ epoch, config });
    return new Promise((resolve) => {
      const entry: FakeEpoch = { epoch, config, options, resolve, done: false };
      this.#epochs.set(epoch, entry);
      options.signal.addEventListener('abort', () => this.exit(epoch, 'aborted', 'signal SIGTERM'), { once: true });
      // A made-up pid, reported after run() returned, as Envoy's spawn reports its own.
      queueMicrotask(() => options.onStarted?.({ pid: 100_000 + epoch }));
      if (this.#auto) setImmediate(() => this.live(epoch));
    });
  }

  /** Epochs started and not yet exited. */
  get running(): number[] {
    return [...this.#epochs.values()].filter((entry) => !entry.done).map((entry) => entry.epoch);
  }

  /** Reports the epoch LIVE; in auto mode its parent then exits normally. */
  live(epoch: number): void {
    const entry = this.#epochs.get(epoch);
    if (!entry || entry.done) return;
    entry.options.onLive();
    if (this.#auto) this.exit(epoch - 1, 'normal', 'exit code 0');
  }

  /** Ends an epoch the way Envoy would have. */
  exit(epoch: number, kind: ExitKind, detail: string = kind): void {
    const entry = this.#epochs.get(epoch);
    if (!entry || entry.done) return;
    entry.done = true;
    entry.resolve({ kind, detail });
  }

  drain(options: { signal: AbortSignal; skipExit?: boolean }): Promise<boolean> {
    this.drains.push(options.skipExit === true);
    return Promise.resolve(this.drainTaken);
  }

  activeConnections(): Promise<number | undefined> {
    return Promise.resolve(this.connections.shift());
  }

  cleanup(epoch: number): Promise<void> {
    this.cleaned.push(epoch);
    return Promise.resolve();
  }
}
