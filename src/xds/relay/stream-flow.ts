/** What can stop and restart reading: Envoy's ADS stream, or the upstream call. */
export interface Pausable {
  pause(): void;
  resume(): void;
}

/** Stops reading `from` until the other side has flushed what it holds (`drained` calls back once). */
export function pauseUntilDrained(from: Pausable, drained: (then: () => void) => void): void {
  from.pause();
  drained(() => from.resume());
}
