import { execa } from 'execa';
import type { LiveDetails, ProxyExit } from '../agent/proxy.ts';
import type { Logger } from '../shared/log.ts';
import { classifyExit, type PortFlags } from './exit.ts';
import { forwardOutput, RecentErrors, type RawLine } from './output.ts';
import type { StderrFifo } from './stderr-fifo.ts';
import type { Verdict } from './validate.ts';

/** What SIGTERM may take before SIGKILL, when the agent's caller does not say. */
export const defaultKillAfterMs = 5000;

export interface EnvoyProcessOptions {
  binaryPath: string;
  args: string[];
  /** Aborting stops Envoy: SIGTERM, then SIGKILL after `killAfterMs`. */
  signal: AbortSignal;
  killAfterMs: number;
  /** The epoch's logger: Envoy's lines and the process's own. */
  logger: Logger;
  /** The ports Envoy binds, to name the flag of one it cannot bind. */
  ports: PortFlags;
  /** A check run once Envoy is spawned: a refusal stops Envoy and is what the epoch ends with. */
  checkBeside?: () => Promise<Verdict>;
  /** Watches admin for this epoch's LIVE until its signal aborts (live.ts). */
  watchLive: (signal: AbortSignal, onLive: (details: LiveDetails) => void) => Promise<void>;
  /** LIVE counts only once the check beside (if any) passed. */
  onLive: (details: LiveDetails) => void;
  /** Told once the process is spawned, with its pid (undefined when the spawn failed). */
  onSpawned: (pid: number | undefined) => void;
  /** Envoy's stderr (stderr-fifo.ts); piped as any child's when absent. */
  stderr?: StderrFifo;
  /**
   * Where lines that are not Envoy's log go as they are once the epoch is
   * LIVE (an access log to /dev/stderr). Before, such lines are what Envoy
   * prints as it gives up: they go to the log, and stderr keeps its one line.
   */
  rawLine?: (line: string) => void;
}

/**
 * Runs one epoch's Envoy process to its end: spawned through execa, its
 * stderr (its own log) forwarded to the log line by line, LIVE watched on
 * admin, and its end classified (exit.ts), a forced kill included. Envoy's
 * stdout is the agent's own, as Istio's agent gives it: an access log to
 * /dev/stdout is written there by Envoy, never through the agent.
 */
export async function runEnvoyProcess(options: EnvoyProcessOptions): Promise<ProxyExit> {
  const { signal, logger } = options;
  const refused = new AbortController();
  const child = spawnEnvoy(options, AbortSignal.any([signal, refused.signal]));
  const verdict = options.checkBeside?.();
  void verdict?.then((found) => !found.accepted && refused.abort());
  logger.info({ envoyPid: child.pid, args: options.args }, 'envoy started');
  options.stderr?.release();
  options.onSpawned(child.pid);
  const recent = new RecentErrors();
  let live = false;
  const raw: RawLine = (line) => live && options.rawLine !== undefined && (options.rawLine(line), true);
  const output = forwardOutput(options.stderr?.lines ?? child.iterable({ from: 'stderr' }), logger, recent, raw);
  const stopWatching = new AbortController();
  const onLive = async (details: LiveDetails) => {
    // Envoy serves from LIVE on, and readiness reads its admin, not this verdict: an access log line may come before the check beside answers.
    live = true;
    if ((await verdict)?.accepted ?? true) options.onLive(details);
  };
  void options.watchLive(AbortSignal.any([signal, stopWatching.signal]), (details) => void onLive(details));
  const result = await child;
  stopWatching.abort();
  await output;
  const found = await verdict;
  if (found !== undefined && !found.accepted) return { kind: 'rejected', detail: found.message };
  const exit = classifyExit(result, recent, signal.aborted, options.ports);
  if (exit.forced)
    logger.warn({ envoyPid: child.pid, killAfterMs: options.killAfterMs, detail: exit.detail }, 'envoy did not stop on SIGTERM in time: killed with SIGKILL');
  return exit;
}

function spawnEnvoy(options: EnvoyProcessOptions, cancelSignal: AbortSignal) {
  // Own process group: a terminal's Ctrl-C reaches the agent only, which
  // then drains Envoy instead of Envoy dying at once.
  // Envoy is detached, so execa's `cleanup` does not apply: an agent that
  // dies takes Envoy with it through PR_SET_PDEATHSIG, which Envoy sets.
  return execa(options.binaryPath, options.args, {
    reject: false,
    cancelSignal,
    forceKillAfterDelay: options.killAfterMs,
    detached: true,
    // Envoy's own log is on stderr; its stdout carries only what it is told
    // to write there (access logs), which a socket would refuse to open.
    stdin: 'ignore',
    stdout: 'inherit',
    // A number is a descriptor the child gets as is (execa's types let only 3-9 through).
    stderr: (options.stderr?.writeFd ?? 'pipe') as 'pipe',
    // Nothing is kept: each line goes to the log as it comes (forwardOutput).
    buffer: false,
  });
}
