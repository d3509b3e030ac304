/** Exit codes of the agent: the contract with whatever supervises it. */
export const ExitCode = {
  ok: 0,
  /** A failure at run time: the outer supervisor should restart us. */
  runtime: 1,
  /** Bad usage or bad config: restarting will not help. */
  usage: 2,
} as const;

export type ErrorCode =
  | 'BAD_FLAG'
  | 'BAD_ENV'
  | 'BAD_FILE'
  | 'BAD_TEMPLATE'
  | 'BOOTSTRAP_REJECTED'
  | 'ENVOY_REJECTED'
  | 'ENVOY_FAILED'
  | 'RETRY_BUDGET_SPENT';

const usageCodes: ReadonlySet<ErrorCode> = new Set([
  'BAD_FLAG',
  'BAD_ENV',
  'BAD_FILE',
  'BAD_TEMPLATE',
  'BOOTSTRAP_REJECTED',
  'ENVOY_REJECTED',
]);

/**
 * The one error type of the agent. `message` is a single line that names the
 * flag, env var or file at fault; `cause` keeps the original for debug logs.
 */
export class AgentError extends Error {
  readonly code: ErrorCode;

  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'AgentError';
    this.code = code;
  }

  get exitCode(): number {
    return usageCodes.has(this.code) ? ExitCode.usage : ExitCode.runtime;
  }
}

/** Shorthands for the usage errors, which are most of them. */
export const badFlag = (flag: string, reason: string, cause?: unknown) =>
  new AgentError('BAD_FLAG', `${flag}: ${reason}`, { cause });

export const badEnv = (name: string, reason: string, cause?: unknown) =>
  new AgentError('BAD_ENV', `env ${name}: ${reason}`, { cause });

export const badFile = (path: string, reason: string, cause?: unknown) =>
  new AgentError('BAD_FILE', `${path}: ${reason}`, { cause });

/**
 * Node's advice on a certificate it cannot verify, to start it with
 * --use-system-ca: not the operator's to act on (the agent's roots are
 * files, or SYSTEM), so it is left out of what is logged.
 */
const nodeSystemCaHint = /; if the root CA is installed locally, try running Node\.js with\s+--use-system-ca\.?/g;

/** A message without the advice Node appends for its own command line. */
export const withoutNodeHints = (message: string) => message.replace(nodeSystemCaHint, '');

/** The message of any thrown value, for log lines. */
export function describe(error: unknown): string {
  return withoutNodeHints(error instanceof Error ? error.message : String(error));
}
