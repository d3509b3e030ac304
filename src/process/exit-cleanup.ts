import type { ChildProcess } from 'node:child_process';

/**
 * Children in the agent's own process group die with it on a terminal's
 * Ctrl-C, but not when the agent exits on its own: SIGTERM them then, as
 * execa's `cleanup` did. Detached children (Envoy) are the agent's to drain
 * and are never tracked here.
 */
const live = new Set<ChildProcess>();
let hooked = false;

export function killOnExit(child: ChildProcess): () => void {
  if (!hooked) {
    hooked = true;
    process.once('exit', () => {
      for (const running of live) running.kill('SIGTERM');
    });
  }
  live.add(child);
  return () => live.delete(child);
}
