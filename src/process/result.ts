/** How a child process ended; what the agent needs of execa's result, and no more. */
export interface ProcessResult {
  exitCode?: number;
  signal?: NodeJS.Signals;
  /** Not exit code 0, or never started. */
  failed: boolean;
  /** Stopped because the caller's AbortSignal fired. */
  isCanceled: boolean;
  timedOut: boolean;
  /** Still running `killAfterMs` after SIGTERM, so it got SIGKILL. */
  isForcefullyTerminated: boolean;
  /** The spawn error's code (ENOENT, EACCES) when it never started. */
  code?: string;
  /** Captured output (`output: 'capture'`), each capped. */
  stdout: string;
  stderr: string;
  /** stdout and stderr interleaved as they arrived. */
  all: string;
  cause?: Error;
}

/** The one error of a failed run, carrying its result's flags and the original error as `cause`. */
export class ProcessError extends Error {
  readonly exitCode?: number;
  readonly signal?: NodeJS.Signals;
  readonly code?: string;
  readonly isCanceled: boolean;
  readonly timedOut: boolean;
  readonly stdout: string;
  readonly stderr: string;

  constructor(file: string, result: ProcessResult) {
    super(`${file}: ${describeEnd(result)}`, { cause: result.cause });
    this.name = 'ProcessError';
    this.exitCode = result.exitCode;
    this.signal = result.signal;
    this.code = result.code;
    this.isCanceled = result.isCanceled;
    this.timedOut = result.timedOut;
    this.stdout = result.stdout;
    this.stderr = result.stderr;
  }
}

/** "exit code 3", "killed by SIGTERM (timed out)", "cannot start (ENOENT)". */
export function describeEnd(result: ProcessResult): string {
  const why = result.timedOut ? ' (timed out)' : result.isCanceled ? ' (canceled)' : '';
  if (result.code !== undefined && result.exitCode === undefined && result.signal === undefined) return `cannot start (${result.code})`;
  return result.signal ? `killed by ${result.signal}${why}` : `exit code ${result.exitCode}${why}`;
}
