import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** The most often a rotation may ask for a full GC: ~15 ms of CPU each (docs/benchmarks.md). */
export const nativeGcIntervalMs = 60_000;

/**
 * A full GC after a rotation's native work, at most once per interval. The
 * X509Certificates and KeyObjects a rotation leaves hold OpenSSL memory V8
 * does not count, so a small heap sees no reason to collect them for hours
 * (issue 44). `gc` is exposed at the first use, in a context of its own, as
 * memory-saver.ts sets its flag: never in the shebang (V8's flag hash keys the
 * compile cache).
 */
export function nativeGcAfterRotation(now: () => number, collect: () => void = lazyGc()): () => void {
  let last: number | undefined;
  return () => {
    const at = now();
    if (last !== undefined && at - last < nativeGcIntervalMs) return;
    last = at;
    collect();
  };
}

function lazyGc(): () => void {
  let gc: (() => void) | undefined;
  return () => {
    if (!gc) {
      setFlagsFromString('--expose-gc');
      gc = runInNewContext('gc') as () => void;
    }
    gc();
  };
}
