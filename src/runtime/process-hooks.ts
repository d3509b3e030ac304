import type { Agent } from '../agent/agent.ts';
import { shuttingDown } from '../agent/reconcile-types.ts';
import type { Logger } from '../shared/log.ts';

/** The process-level hooks (the CLI's process guard): signals and faults reach the runtime only while registered. */
export interface ProcessHooks {
  /** A terminating signal calls `handler` (drain, then exit) instead of exiting at once; returns the undo. */
  onTerminate(handler: (signal: NodeJS.Signals) => void): () => void;
  /** A fault runs `stop` (Envoy down) before the process exits 1; returns the undo. */
  whileRunning(stop: () => Promise<void>): () => void;
}

/**
 * Signals and faults reach the loop from now on: SIGTERM, SIGINT and SIGHUP
 * drain (a second one hurries the drain); a fault stops Envoy at once and
 * waits for `stopped`, every part undone, before the process exits 1.
 */
export function hookProcess(guard: ProcessHooks, parts: { agent: Agent; stopped: () => Promise<void>; logger: Logger }): Disposable {
  const { agent } = parts;
  const undoTerminate = guard.onTerminate((signal) => {
    parts.logger.info({ signal }, 'signal received');
    if (shuttingDown(agent.state)) agent.dispatch({ type: 'hurry' });
    agent.dispatch({ type: 'shutdown' });
  });
  const undoFault = guard.whileRunning(async () => {
    agent.dispatch({ type: 'fault' });
    await parts.stopped();
  });
  return { [Symbol.dispose]: () => (undoFault(), undoTerminate()) };
}
