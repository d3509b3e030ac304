import type { XdsReadiness } from '../agent/restart-gate.ts';

/**
 * The relay's readiness for the restart gate, before the relay has loaded:
 * the loop starts Envoy first (envoy-recipe.ts) and the relay joins once
 * Envoy is spawned. Until then it answers as a relay that has not dialled
 * yet does (available); `attach` hands over to the relay and tells the
 * listeners if that changes the answer.
 */
export class LateXdsReadiness implements XdsReadiness {
  readonly #listeners = new Set<(open: boolean) => void>();
  #relay: XdsReadiness | undefined;
  #detach: (() => void) | undefined;

  canConfigure(): boolean {
    return this.#relay?.canConfigure() ?? true;
  }

  onGateChange(listener: (open: boolean) => void): () => void {
    this.#listeners.add(listener);
    return () => void this.#listeners.delete(listener);
  }

  /** The relay answers from now on; returns the undo (back to the answer before it). */
  attach(relay: XdsReadiness): () => void {
    const before = this.canConfigure();
    this.#relay = relay;
    this.#detach = relay.onGateChange((open) => this.#tell(open));
    if (relay.canConfigure() !== before) this.#tell(relay.canConfigure());
    return () => {
      this.#detach?.();
      this.#relay = undefined;
    };
  }

  #tell(open: boolean): void {
    for (const listener of [...this.#listeners]) listener(open);
  }
}
