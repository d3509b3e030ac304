import { boundedTimer, type Timer, type TimerHost } from '../shared/clock.ts';

/**
 * How many scrapes of the merged metrics are made at once. Each costs Envoy a
 * render of all its stats and the agent the pass through them; a peer that
 * asks on a hundred connections and never reads would otherwise have a
 * hundred made at once, and the event loop, busy with them, accepts the
 * kubelet's probe seconds late. Prometheus scrapes a target one at a time:
 * one peer (an address of the pod network) gets `perPeer` at once and
 * `waitingPerPeer` more waiting up to `waitMs` for their turn; beyond that,
 * or past the wait, a scrape is refused (503) at once, which costs nothing.
 * `total` bounds every peer together. A scrape holds its place until its
 * answer is gone: sent, or cut by the send timeout (10 s) when never read.
 * Loopback peers (the pod's own containers) are held by `total` only.
 */
export const scrapeLimits = { perPeer: 1, waitingPerPeer: 2, total: 8, waitMs: 5_000 } as const;

export interface ScrapeGateOptions {
  perPeer: number;
  waitingPerPeer: number;
  total: number;
  waitMs: number;
  /** Peers held by `total` only. */
  trusted(peer: string): boolean;
  /** The waits' timers; tests pass fakes. */
  timers?: TimerHost;
}

interface Waiter {
  peer: string;
  admit(): void;
}

interface Peer {
  running: number;
  waiting: number;
}

export class ScrapeGate {
  readonly #options: ScrapeGateOptions;
  readonly #peers = new Map<string, Peer>();
  /** In the order they came; each is admitted once its peer and the total have room. */
  #waiting: Waiter[] = [];
  #running = 0;

  constructor(options: ScrapeGateOptions) {
    this.#options = options;
  }

  /** Scrapes being made now; for tests and the debug view. */
  get running(): number {
    return this.#running;
  }

  /**
   * True once this scrape may be made: it then holds its place until `done`
   * aborts (the answer's close). False when refused, at once or after the
   * wait; also when `done` aborts while waiting.
   */
  enter(peer: string, done: AbortSignal): Promise<boolean> {
    if (done.aborted) return Promise.resolve(false);
    const state = this.#peers.get(peer) ?? { running: 0, waiting: 0 };
    this.#peers.set(peer, state);
    // Room appears only when a scrape ends, and every waiter it makes room for is admitted then: none is passed over here.
    if (this.#roomFor(peer, state)) return Promise.resolve(this.#hold(peer, state, done));
    if (state.waiting >= this.#options.waitingPerPeer) return Promise.resolve(this.#forget(peer, state, false));
    return new Promise((resolve) => this.#wait(peer, state, done, resolve));
  }

  #wait(peer: string, state: Peer, done: AbortSignal, resolve: (admitted: boolean) => void): void {
    state.waiting++;
    let timer: Timer | undefined;
    const leave = (admitted: boolean) => {
      timer?.cancel();
      done.removeEventListener('abort', give);
      this.#waiting = this.#waiting.filter((waiter) => waiter !== entry);
      state.waiting--;
      resolve(admitted ? this.#hold(peer, state, done) : this.#forget(peer, state, false));
    };
    const give = () => leave(false);
    const entry: Waiter = { peer, admit: () => leave(true) };
    timer = boundedTimer(give, this.#options.waitMs, { unref: true, host: this.#options.timers });
    done.addEventListener('abort', give, { once: true });
    this.#waiting.push(entry);
  }

  #roomFor(peer: string, state: Peer): boolean {
    if (this.#running >= this.#options.total) return false;
    return this.#options.trusted(peer) || state.running < this.#options.perPeer;
  }

  #hold(peer: string, state: Peer, done: AbortSignal): boolean {
    state.running++;
    this.#running++;
    done.addEventListener('abort', () => this.#release(peer, state), { once: true });
    return true;
  }

  #release(peer: string, state: Peer): void {
    state.running--;
    this.#running--;
    this.#forget(peer, state, true);
    // Every waiter whose peer now has room, in turn; the others keep their place.
    for (const waiter of [...this.#waiting]) {
      const waiting = this.#peers.get(waiter.peer);
      if (waiting && this.#roomFor(waiter.peer, waiting)) waiter.admit();
    }
  }

  /** A peer with nothing running or waiting is no longer tracked: the table holds only peers at work. */
  #forget(peer: string, state: Peer, result: boolean): boolean {
    if (state.running === 0 && state.waiting === 0) this.#peers.delete(peer);
    return result;
  }
}
