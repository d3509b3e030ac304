import { setFlagsFromString } from 'node:v8';
import type { Event } from '../agent/reconcile-types.ts';

/**
 * V8's memory-saver mode, switched on once the first Envoy is LIVE. Under
 * weeks of scrapes, rotations and pushes V8 otherwise keeps growing its heap
 * far past what is live; from the start the mode costs start CPU and V8's
 * flag hash, which the compile cache is keyed by (docs/benchmarks.md, Soak).
 */
export function saveMemoryOnceLive(setFlags: (flags: string) => void = setFlagsFromString): (event: Event) => void {
  let done = false;
  return (event) => {
    if (done || event.type !== 'epoch-live') return;
    done = true;
    setFlags('--memory-saver-mode');
  };
}
