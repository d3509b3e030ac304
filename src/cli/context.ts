import type { Writable } from 'node:stream';

/** What a subcommand may touch of the outside world; tests pass their own. */
export interface CommandContext {
  stdout: Writable;
  stderr: Writable;
  env: NodeJS.ProcessEnv;
  /** Print stack traces with errors (debug logging was asked for). */
  debug: boolean;
  /** Set by a command that ends with a code other than 0 without throwing. */
  exitCode?: number;
}
