/**
 * The runtime's typed events: what one part tells the others (Envoy's first
 * spawn, the end of the run), instead of promises resolved by hand.
 */
export class RuntimeEvent<T = void> {
  readonly #listeners = new Set<(value: T) => void>();
  #happened: { value: T } | undefined;

  /** Hears every emit from now on; returns the undo. */
  on(listener: (value: T) => void): () => void {
    this.#listeners.add(listener);
    return () => void this.#listeners.delete(listener);
  }

  emit(value: T): void {
    this.#happened ??= { value };
    for (const listener of [...this.#listeners]) listener(value);
  }

  /** Resolves on the first emit; at once when it happened already. */
  first(): Promise<T> {
    if (this.#happened) return Promise.resolve(this.#happened.value);
    return new Promise((resolve) => {
      const off = this.on((value) => (off(), resolve(value)));
    });
  }
}

export interface RuntimeEvents {
  /** An Envoy process was spawned (each epoch): the CA's first call and the relay's predial wait for it. */
  envoySpawned: RuntimeEvent<{ epoch: number; pid: number }>;
  /** Something asked the run to end (a signal, /quitquitquit) where no reconcile loop runs (proxyless). */
  stopRequested: RuntimeEvent<string>;
  /** Every part is stopped: a fault waits for it before the process exits 1. */
  stopped: RuntimeEvent;
}

export function runtimeEvents(): RuntimeEvents {
  return { envoySpawned: new RuntimeEvent(), stopRequested: new RuntimeEvent(), stopped: new RuntimeEvent() };
}
