import { spawn, type ChildProcess } from 'node:child_process';
import type { Readable } from 'node:stream';
import { OutputCapture } from './capture.ts';
import { killOnExit } from './exit-cleanup.ts';
import { ProcessError, type ProcessResult } from './result.ts';
import { boundedTimer, type Timer } from '../shared/clock.ts';

export interface StartOptions {
  /** Aborting it stops the child (SIGTERM, then SIGKILL); the result says `isCanceled`. */
  signal?: AbortSignal;
  /** Stops the child like `signal` after this long; the result says `timedOut`. */
  timeoutMs?: number;
  /** How long SIGTERM may take before SIGKILL (default 5 s). */
  killAfterMs?: number;
  /** Its own process group: a terminal's Ctrl-C then reaches the agent only. */
  detached?: boolean;
  /** Written to stdin, which is then closed; without it stdin is ignored. */
  input?: string;
  /** `pipe`: the caller reads `stdout`/`stderr`; `capture` (default): text in the result; `ignore`. */
  output?: 'pipe' | 'capture' | 'ignore';
  /** Cap of each captured text (default 1 MiB). */
  maxOutputBytes?: number;
}

export interface Subprocess {
  /** Undefined when it could not be started (see the result's `code`). */
  readonly pid: number | undefined;
  readonly stdout: Readable | null;
  readonly stderr: Readable | null;
  /** Settles once the child is gone and reaped; never rejects. */
  readonly result: Promise<ProcessResult>;
}

type StopReason = 'canceled' | 'timedOut';

/**
 * Starts `file` and watches it to the end: the first stop reason (abort or
 * timeout) sends SIGTERM and arms a SIGKILL; every timer and listener is
 * cleared when the child is reaped.
 */
export function startProcess(file: string, args: readonly string[], options: StartOptions = {}): Subprocess {
  const output = options.output ?? 'capture';
  const child = spawn(file, args, {
    detached: options.detached ?? false,
    stdio: [options.input === undefined ? 'ignore' : 'pipe', output === 'ignore' ? 'ignore' : 'pipe', output === 'ignore' ? 'ignore' : 'pipe'],
  });
  const capture = new OutputCapture(output === 'capture' ? (options.maxOutputBytes ?? 1024 * 1024) : 0);
  if (output === 'capture') {
    capture.read(child.stdout, 'stdout');
    capture.read(child.stderr, 'stderr');
  }
  writeInput(child, options.input);
  const result = watch(child, options, capture);
  return { pid: child.pid, stdout: child.stdout, stderr: child.stderr, result };
}

/** Runs `file` to its end and rejects with a ProcessError unless it exits 0. */
export async function runProcess(file: string, args: readonly string[], options: StartOptions = {}): Promise<ProcessResult> {
  const result = await startProcess(file, args, options).result;
  if (result.failed) throw new ProcessError(file, result);
  return result;
}

function writeInput(child: ChildProcess, input: string | undefined): void {
  if (input === undefined || !child.stdin) return;
  // A child that exits without reading its stdin is its exit code's business, not an EPIPE crash.
  child.stdin.on('error', () => undefined);
  child.stdin.end(input);
}

function watch(child: ChildProcess, options: StartOptions, capture: OutputCapture): Promise<ProcessResult> {
  let reason: StopReason | undefined;
  let forced = false;
  let killTimer: Timer | undefined;
  let spawnError: (Error & { code?: string }) | undefined;
  const stop = (why: StopReason) => {
    if (reason !== undefined || child.exitCode !== null || child.signalCode !== null) return;
    reason = why;
    child.kill('SIGTERM');
    killTimer = boundedTimer(() => void (forced = child.kill('SIGKILL')), options.killAfterMs ?? 5000);
  };
  const onAbort = () => stop('canceled');
  if (options.signal?.aborted) queueMicrotask(onAbort);
  options.signal?.addEventListener('abort', onAbort, { once: true });
  const timeout = options.timeoutMs === undefined ? undefined : boundedTimer(() => stop('timedOut'), options.timeoutMs);
  const forget = options.detached ? () => false : killOnExit(child);
  child.on('error', (error) => (spawnError ??= error));
  return new Promise((resolve) => {
    child.once('close', (exitCode: number | null, signal: NodeJS.Signals | null) => {
      timeout?.cancel();
      killTimer?.cancel();
      options.signal?.removeEventListener('abort', onAbort);
      forget();
      resolve({
        // A child that never started "exits" with a negative errno: no exit code at all.
        exitCode: spawnError && (exitCode ?? -1) < 0 ? undefined : (exitCode ?? undefined), signal: signal ?? undefined, failed: exitCode !== 0,
        isCanceled: reason === 'canceled', timedOut: reason === 'timedOut', isForcefullyTerminated: forced,
        code: spawnError?.code, cause: spawnError, ...capture.text(),
      });
    });
  });
}
