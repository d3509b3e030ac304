import { boundedTimer, type Timer } from '../shared/clock.ts';
import { describe } from '../shared/errors.ts';

/** The part of `process` the guard listens on; tests pass an EventEmitter (`any[]`: as process.on takes). */
export interface GuardedProcess {
  on(event: string, listener: (...args: any[]) => void): unknown;
  off(event: string, listener: (...args: any[]) => void): unknown;
}

export type Report = (level: 'error' | 'warn' | 'info', fields: Record<string, unknown>, message: string) => void;

export interface ProcessGuardOptions {
  target: GuardedProcess;
  exit(code: number): void;
  /** Where lines go until the proxy hands over its logger. */
  report: Report;
  /** How long stopping Envoy after a fault may take before the exit goes ahead anyway. */
  stopWithinMs: number;
  timer?: (callback: () => void, ms: number) => Timer;
}

const oneLine = (text: string) => text.replace(/\s*\n\s*/g, ' ').slice(0, 1000);

/** Signals that end the agent: a drain first when the proxy runs. */
export const terminatingSignals = ['SIGTERM', 'SIGINT', 'SIGHUP'] as const;
/**
 * Signals that mean nothing to the agent. Node's default for SIGUSR2 is to
 * die silently, and SIGUSR1 opens the inspector on 127.0.0.1:9229, which
 * every container of the pod shares: with a listener on it neither happens
 * (the shebang's --disable-sigusr1 closes the window before this runs).
 */
export const ignoredSignals = ['SIGUSR1', 'SIGUSR2'] as const;
const signalNumbers: Record<(typeof terminatingSignals)[number], number> = { SIGHUP: 1, SIGINT: 2, SIGTERM: 15 };

/**
 * The process-level handlers: the one owner of signals and of faults no
 * caller handled. A fault (an unhandled rejection or an uncaught
 * exception) is one error line; Envoy is then stopped (no orphan, no
 * drain: the agent's own state is in doubt) and the process exits 1.
 */
export class ProcessGuard {
  readonly #options: ProcessGuardOptions;
  #report: Report;
  readonly #terminate: ((signal: NodeJS.Signals) => void)[] = [];
  readonly #stops = new Set<() => Promise<void>>();
  #faulted = false;
  #uninstall: (() => void) | undefined;

  constructor(options: ProcessGuardOptions) {
    this.#options = options;
    this.#report = options.report;
  }

  /** Set once a fault decided the exit: 1, whatever the command was about to return. */
  get exitCode(): number | undefined {
    return this.#faulted ? 1 : undefined;
  }

  install(): void {
    if (this.#uninstall) return;
    const { target } = this.#options;
    const listeners: [string, (...args: any[]) => void][] = [
      ['unhandledRejection', (reason: unknown) => void this.#fault('unhandled promise rejection', reason)],
      ['uncaughtException', (error: unknown) => void this.#fault('uncaught exception', error)],
      ...terminatingSignals.map((signal): [string, () => void] => [signal, () => this.#onTerminate(signal)]),
      ...ignoredSignals.map((signal): [string, () => void] => [
        signal,
        () => this.#line('warn', { signal }, 'signal ignored: it has no meaning to the agent (the inspector stays closed)'),
      ]),
    ];
    for (const [event, listener] of listeners) target.on(event, listener);
    this.#uninstall = () => listeners.forEach(([event, listener]) => target.off(event, listener));
  }

  uninstall(): void {
    this.#uninstall?.();
    this.#uninstall = undefined;
  }

  /** A line that cannot be written (stdout gone: EPIPE) must not become a fault inside the fault handler. */
  #line(...args: Parameters<Report>): void {
    try {
      this.#report(...args);
    } catch {
      // Nowhere left to say it; the exit code still does.
    }
  }

  /** Lines go to `report` from now on (the proxy's logger); returns the undo. */
  useReport(report: Report): () => void {
    this.#report = report;
    return () => void (this.#report = this.#options.report);
  }

  /** While registered, a terminating signal calls `handler` (drain, then exit) instead of exiting at once. */
  onTerminate(handler: (signal: NodeJS.Signals) => void): () => void {
    this.#terminate.push(handler);
    return () => void this.#terminate.splice(this.#terminate.indexOf(handler) >>> 0, 1);
  }

  /** While registered, a fault runs `stop` (Envoy down) before the process exits. */
  whileRunning(stop: () => Promise<void>): () => void {
    this.#stops.add(stop);
    return () => void this.#stops.delete(stop);
  }

  #onTerminate(signal: (typeof terminatingSignals)[number]): void {
    const handler = this.#terminate.at(-1);
    if (handler) return handler(signal);
    // Nothing runs yet (or any more) that a drain would help: exit as the default action would, but say so.
    this.#line('info', { signal }, 'signal received; exiting');
    this.#options.exit(128 + signalNumbers[signal]);
  }

  async #fault(kind: string, error: unknown): Promise<void> {
    if (this.#faulted) return this.#line('error', { fault: kind, error: oneLine(describe(error)) }, 'another fault while stopping; ignored');
    this.#faulted = true;
    this.#line('error', { fault: kind, error: oneLine(describe(error)) }, `${kind}: stopping Envoy and exiting 1`);
    const timer = this.#options.timer ?? boundedTimer;
    let expired!: () => void;
    const deadline = new Promise<void>((resolve) => (expired = resolve));
    const cancel = timer(() => expired(), this.#options.stopWithinMs);
    const stops = Promise.allSettled([...this.#stops].map((stop) => stop()));
    await Promise.race([stops, deadline]);
    cancel.cancel();
    this.#options.exit(1);
  }
}

/** Until the proxy's logger takes over: one line on stderr. */
export const stderrReport: Report = (_level, fields, message) => {
  const details = Object.entries(fields).map(([key, value]) => `${key}=${String(value).replace(/\s+/g, ' ')}`).join(' ');
  process.stderr.write(`pilot-agent: ${message}${details ? ` (${details})` : ''}\n`);
};

/** The guard of this process: main() installs it, the proxy command registers its drain and its stop. */
export const processGuard = new ProcessGuard({
  target: process,
  exit: (code) => process.exit(code),
  report: stderrReport,
  // Envoy gets SIGTERM, then SIGKILL after 5 s (execa's forceKillAfterDelay in envoy/envoy-proxy.ts): room for both epochs and the cleanup.
  stopWithinMs: 15_000,
});
