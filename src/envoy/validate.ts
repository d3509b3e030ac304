import { setPriority } from 'node:os';
import { execa } from 'execa';
import { AgentError, badFlag } from '../shared/errors.ts';
import { checkIsEnvoy } from './version.ts';

export interface ValidateOptions {
  /** Envoy flags the bootstrap is checked with (`--component-log-level`, `--concurrency`). */
  extraArgs?: readonly string[];
  /**
   * The validating Envoy's nice value (setpriority, 0 to 19): a check that
   * runs beside a starting Envoy yields the CPU to it and to the agent.
   */
  niceness?: number;
}

/**
 * Asks Envoy itself whether a bootstrap is valid (`--mode validate`, ~0.1 s),
 * so a bad bootstrap ends the agent with exit 2 and Envoy's own reason
 * instead of a crash loop.
 */
export async function validateBootstrap(binaryPath: string, bootstrapPath: string, options: ValidateOptions = {}): Promise<void> {
  const { extraArgs = [] } = options;
  const result = await runValidate(binaryPath, bootstrapPath, extraArgs, options.niceness);
  if (result.exitCode === 0 && envoySaidOk(result.all)) return;
  if (result.code === 'ENOENT' || result.code === 'EACCES') {
    throw badFlag('--binaryPath', `cannot run ${binaryPath} (${result.code})`);
  }
  // Asked only when the verdict is not Envoy's plain OK, so `--version` stays off the path to ready.
  await checkIsEnvoy(binaryPath);
  if (result.exitCode === 0) return;
  const reason = rejectionReason(result.all);
  // The bootstrap alone is fine: the flags passed along are what Envoy refuses.
  if (extraArgs.length > 0 && (await runValidate(binaryPath, bootstrapPath, [], options.niceness)).exitCode === 0) throw badFlag(agentFlags(extraArgs), `Envoy rejects it: ${reason}`);
  throw new AgentError('BOOTSTRAP_REJECTED', bootstrapRejected(bootstrapPath, reason));
}

/** The one line a bootstrap Envoy refuses ends the agent with. */
export const bootstrapRejected = (bootstrapPath: string, reason: string) => `${bootstrapPath}: Envoy rejects the bootstrap: ${reason}`;

/**
 * Envoy's verdict as the one line the agent exits 2 with (the message
 * validateBootstrap throws); undefined when Envoy accepts the bootstrap.
 */
export async function rejectionMessage(binaryPath: string, bootstrapPath: string, options: ValidateOptions = {}): Promise<string | undefined> {
  try {
    await validateBootstrap(binaryPath, bootstrapPath, options);
    return undefined;
  } catch (error) {
    if (error instanceof AgentError) return error.message;
    throw error;
  }
}

/**
 * The same check before each hot-restart epoch starts, as a value: the files a bootstrap
 * names (certificates) are read now. A hot-restart child that fails its
 * start has already shut its parent's admin down, and then either ends the
 * parent or leaves the chain's shared memory "initializing" for good (Envoy
 * 1.40, both seen): it must not be started at all. Undefined when valid.
 */
export async function bootstrapRejection(binaryPath: string, bootstrapPath: string, extraArgs: readonly string[] = []): Promise<string | undefined> {
  const result = await runValidate(binaryPath, bootstrapPath, extraArgs);
  return result.exitCode === 0 ? undefined : rejectionReason(result.all || (typeof result.code === 'string' ? result.code : ''));
}

/** What Envoy prints when it accepts a bootstrap; `/bin/true` exits 0 without it. */
const envoySaidOk = (output: string) => /^configuration '.*' OK$/m.test(output);

/** The agent flags behind Envoy's `--component-log-level` and `--concurrency`. */
function agentFlags(extraArgs: readonly string[]): string {
  const names: Record<string, string> = { '--component-log-level': '--proxyComponentLogLevel', '--concurrency': '--concurrency' };
  return extraArgs.filter((arg) => arg in names).map((arg) => names[arg]).join(' or ');
}

/** Envoy's verdict is a few lines; a megabyte of output is not a verdict, and is not kept. */
const maxVerdictBytes = 1024 * 1024;

function runValidate(binaryPath: string, bootstrapPath: string, extraArgs: readonly string[], niceness?: number) {
  const child = execa(binaryPath, ['--mode', 'validate', '-c', bootstrapPath, '-l', 'error', ...extraArgs], { reject: false, all: true, stdin: 'ignore', timeout: 30_000, forceKillAfterDelay: 5000, maxBuffer: maxVerdictBytes });
  if (niceness !== undefined && child.pid !== undefined) {
    try {
      setPriority(child.pid, niceness);
    } catch {
      // Gone already, or not ours to lower: it then runs at the agent's priority, as before.
    }
  }
  return child;
}

/** The line of Envoy's output that says what is wrong, without the log prefix. */
export function rejectionReason(output: string): string {
  const lines = output.split('\n').map((line) => line.replace(/^\[[^\]]*\]\[\d+\]\[\w+\]\[\w+\] (\[[^\]]*\] )?/, '').trim());
  const reason = lines.find((line) => /error|invalid|unknown|exception|cannot|unable/i.test(line)) ?? lines.find(Boolean);
  return (reason ?? 'no output').slice(0, 500);
}
