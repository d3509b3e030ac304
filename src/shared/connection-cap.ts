import type { Server, Socket } from 'node:net';
import { boundedInterval, type Timer, type TimerHost } from './clock.ts';

/** A connection as the cap sees it: a socket (HTTP/1) or an HTTP/2 session. */
export interface Connection {
  destroy(): void;
  once(event: 'close', listener: () => void): unknown;
}

export interface ConnectionCapOptions<C extends Connection = Socket> {
  /** Connections from untrusted peers (the pod network) open at once. */
  max: number;
  /** Room on top of `max` only trusted peers (loopback) may take, so a flood from outside never locks them out. */
  reservedForTrusted: number;
  /** A connection that has nothing in flight for this long is closed. */
  idleMs: number;
  /** Loopback peers, for the status port; every peer of a Unix socket (0600, our own uid). */
  trusted(connection: C): boolean;
  /** Called once per connection refused or closed to make room, for a counter and a rate-limited line. */
  onShed?(what: 'refused' | 'evicted' | 'idle', trusted: boolean): void;
  /** Monotonic ms; tests pass their own. */
  now?: () => number;
  /** The sweeper's timers; tests pass fakes. */
  timers?: TimerHost;
}

interface Tracked {
  trusted: boolean;
  busy: number;
  idleSince: number;
}

/**
 * Bounds what connections can cost the agent: file descriptors and memory.
 * When a class is full, the connection idle longest (no request or stream
 * in flight: a slowloris, a parked keep-alive) is closed for the new one;
 * only when every one is busy is the new one refused. Idle connections are
 * also closed after `idleMs`. Servers report work with `busy`/`idle`.
 */
export class ConnectionCap<C extends Connection = Socket> {
  readonly #options: ConnectionCapOptions<C>;
  readonly #open = new Map<C, Tracked>();
  readonly #now: () => number;
  #sweeper: Timer | undefined;
  #attached = false;

  constructor(options: ConnectionCapOptions<C>) {
    this.#options = options;
    this.#now = options.now ?? (() => performance.now());
  }

  /** Watches `server`'s connections from now on (`admit` is then called for each); the sweep stops when the server closes. */
  attach(server: Server, admitEach = true): void {
    if (admitEach) server.on('connection', (socket: C) => this.admit(socket));
    this.#attached = true;
    if (this.#anyIdle()) this.#wake();
    server.once('close', () => this.stop());
  }

  stop(): void {
    this.#attached = false;
    this.#sleep();
  }

  /** Takes a new connection in, making room or refusing it. True when it stays. */
  admit(socket: C): boolean {
    const trusted = this.#options.trusted(socket);
    if (this.#full(trusted)) {
      const victim = this.#idlest(trusted);
      if (!victim) {
        this.#options.onShed?.('refused', trusted);
        socket.destroy();
        return false;
      }
      this.#options.onShed?.('evicted', this.#open.get(victim)!.trusted);
      this.#drop(victim);
    }
    this.#open.set(socket, { trusted, busy: 0, idleSince: this.#now() });
    socket.once('close', () => this.#open.delete(socket));
    this.#wake();
    return true;
  }

  /** A request or stream started on `socket`. */
  busy(socket: C): void {
    const tracked = this.#open.get(socket);
    if (tracked) tracked.busy++;
  }

  /** A request or stream on `socket` ended. */
  idle(socket: C): void {
    const tracked = this.#open.get(socket);
    if (!tracked || tracked.busy === 0) return;
    if (--tracked.busy === 0) {
      tracked.idleSince = this.#now();
      this.#wake();
    }
  }

  /** Closes connections idle past `idleMs`. */
  sweep(): void {
    const before = this.#now() - this.#options.idleMs;
    for (const [socket, tracked] of this.#open) {
      if (tracked.busy === 0 && tracked.idleSince <= before) {
        this.#options.onShed?.('idle', tracked.trusted);
        this.#drop(socket);
      }
    }
  }

  get size(): number {
    return this.#open.size;
  }

  #full(trusted: boolean): boolean {
    const { max, reservedForTrusted } = this.#options;
    if (this.#open.size >= max + reservedForTrusted) return true;
    return !trusted && this.#count(false) >= max;
  }

  #count(trusted: boolean): number {
    let count = 0;
    for (const tracked of this.#open.values()) if (tracked.trusted === trusted) count++;
    return count;
  }

  /** The idle connection to close for a newcomer: untrusted ones first, then (for a trusted newcomer) trusted ones. */
  #idlest(trusted: boolean): C | undefined {
    let best: [C, Tracked] | undefined;
    for (const entry of this.#open) {
      const [, tracked] = entry;
      if (tracked.busy > 0 || (tracked.trusted && !trusted)) continue;
      const better = !best || (best[1].trusted && !tracked.trusted) || (best[1].trusted === tracked.trusted && tracked.idleSince < best[1].idleSince);
      if (better) best = entry;
    }
    return best?.[0];
  }

  /**
   * The sweeper runs only while some connection is idle: an agent with no
   * connection, or only Envoy's busy xDS and SDS streams, has no timer
   * waking it (one a second per listener was most of an idle agent's
   * wake-ups). It stops at the first tick that finds nothing idle.
   */
  #wake(): void {
    if (!this.#attached || this.#sweeper) return;
    this.#sweeper = boundedInterval(() => this.#tick(), Math.max(250, Math.min(1000, this.#options.idleMs / 4)), { unref: true, host: this.#options.timers });
  }

  #tick(): void {
    this.sweep();
    if (!this.#anyIdle()) this.#sleep();
  }

  #sleep(): void {
    this.#sweeper?.cancel();
    this.#sweeper = undefined;
  }

  #anyIdle(): boolean {
    for (const tracked of this.#open.values()) if (tracked.busy === 0) return true;
    return false;
  }

  #drop(socket: C): void {
    this.#open.delete(socket);
    socket.destroy();
  }
}

/**
 * An onShed that logs at most one line a minute with the counts since the
 * last: a flood must not turn into a flood of log lines.
 */
export function shedLog(
  log: (fields: Record<string, unknown>, message: string) => void,
  listener: string,
  now: () => number = () => performance.now(),
): NonNullable<ConnectionCapOptions['onShed']> {
  let counts: Record<string, number> = {};
  let lastAt = -Infinity;
  return (what, trusted) => {
    const key = `${what}${trusted ? 'Loopback' : ''}`;
    counts[key] = (counts[key] ?? 0) + 1;
    if (now() - lastAt < 60_000) return;
    lastAt = now();
    log({ listener, ...counts }, 'connection cap: connections refused or closed to make room (counts since the last such line)');
    counts = {};
  };
}
