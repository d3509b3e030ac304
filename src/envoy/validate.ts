import { randomUUID } from 'node:crypto';
import { open, rm } from 'node:fs/promises';
import { setPriority } from 'node:os';
import { dirname, join } from 'node:path';
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
 * Envoy's verdict on a bootstrap. A refusal carries Envoy's own `reason`
 * and the one line (`message`) the agent exits 2 with: BOOTSTRAP_REJECTED,
 * or BAD_FLAG when a flag (or --binaryPath itself) is what is wrong.
 */
export type Verdict = { accepted: true } | { accepted: false; code: 'BOOTSTRAP_REJECTED' | 'BAD_FLAG'; reason: string; message: string };

const accepted: Verdict = { accepted: true };

/** The verdict on a bootstrap Envoy refused with `reason` (in validate mode, or in its own start). */
export function rejected(bootstrapPath: string, reason: string): Extract<Verdict, { accepted: false }> {
  const message = `${bootstrapPath}: Envoy rejects the bootstrap: ${reason}${istioBuildHint(reason)}`;
  return { accepted: false, code: 'BOOTSTRAP_REJECTED', reason, message };
}

/**
 * An extension only Istio's own Envoy build registers (a waypoint's metadata
 * discovery, `istio.workload.BootstrapExtension`): say which Envoy is needed,
 * not just that the type is unknown.
 */
function istioBuildHint(reason: string): string {
  const type = /registered implementation for '[^']*' with type URL: '(istio\.[\w.]+)'/.exec(reason)?.[1];
  return type ? ` (${type} is in Istio's own Envoy build, not upstream Envoy: run with Istio's proxyv2 Envoy)` : '';
}

function badFlagVerdict(error: AgentError): Verdict {
  return { accepted: false, code: 'BAD_FLAG', reason: error.message, message: error.message };
}

/**
 * Asks Envoy itself whether a bootstrap is valid (`--mode validate`, ~0.1 s),
 * so a bad bootstrap ends the agent with exit 2 and Envoy's own reason
 * instead of a crash loop. The files a bootstrap names (certificates) are
 * read now. Never rejects.
 */
export async function bootstrapVerdict(binaryPath: string, bootstrapPath: string, options: ValidateOptions = {}): Promise<Verdict> {
  const { extraArgs = [] } = options;
  const result = await runValidate(binaryPath, bootstrapPath, extraArgs, options.niceness);
  if (result.exitCode === 0 && envoySaidOk(result.all)) return accepted;
  if (result.code === 'ENOENT' || result.code === 'EACCES') return badFlagVerdict(badFlag('--binaryPath', `cannot run ${binaryPath} (${result.code})`));
  // Asked only when the verdict is not Envoy's plain OK, so `--version` stays off the path to ready.
  const notEnvoy = await checkIsEnvoy(binaryPath).then(() => undefined, (error: unknown) => error);
  if (notEnvoy instanceof AgentError) return badFlagVerdict(notEnvoy);
  if (result.exitCode === 0) return accepted;
  const reason = envoyReason(result.all || result.code || '');
  // The bootstrap alone is fine: the flags passed along are what Envoy refuses.
  if (extraArgs.length > 0 && (await runValidate(binaryPath, bootstrapPath, [], options.niceness)).exitCode === 0) {
    return badFlagVerdict(badFlag(agentFlags(extraArgs), `Envoy rejects it: ${reason}`));
  }
  return rejected(bootstrapPath, reason);
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

/**
 * Envoy opens a bootstrap's access log files even to validate it, and a
 * socket (what a child's output is piped through) cannot be opened again by
 * path: /dev/stdout would refuse a bootstrap that Envoy serves. The output
 * goes to a file beside the bootstrap instead, read back and removed.
 */
async function runValidate(binaryPath: string, bootstrapPath: string, extraArgs: readonly string[], niceness?: number) {
  const outputPath = join(dirname(bootstrapPath), `.envoy-validate-${randomUUID()}.out`);
  const output = await open(outputPath, 'a+', 0o600);
  try {
    const child = execa(binaryPath, ['--mode', 'validate', '-c', bootstrapPath, '-l', 'error', ...extraArgs], {
      reject: false,
      stdin: 'ignore',
      // A number is a descriptor the child gets as is (execa's types let only 3-9 through).
      stdout: output.fd as 3,
      stderr: output.fd as 3,
      timeout: 30_000,
      forceKillAfterDelay: 5000,
    });
    lowerPriority(child.pid, niceness);
    const { exitCode, code } = await child;
    const { buffer, bytesRead } = await output.read(Buffer.alloc(maxVerdictBytes), 0, maxVerdictBytes, 0);
    return { exitCode, code, all: buffer.toString('utf8', 0, bytesRead) };
  } finally {
    await output.close();
    await rm(outputPath, { force: true });
  }
}

function lowerPriority(pid: number | undefined, niceness: number | undefined): void {
  if (niceness === undefined || pid === undefined) return;
  try {
    setPriority(pid, niceness);
  } catch {
    // Gone already, or not ours to lower: it then runs at the agent's priority, as before.
  }
}

/** The line of Envoy's output that says what is wrong, without the log prefix. */
export function envoyReason(output: string): string {
  const lines = output.split('\n').map((line) => line.replace(/^\[[^\]]*\]\[\d+\]\[\w+\]\[\w+\] (\[[^\]]*\] )?/, '').trim());
  const reason = lines.find((line) => /error|invalid|unknown|exception|cannot|unable/i.test(line)) ?? lines.find(Boolean);
  return (reason ?? 'no output').slice(0, 500);
}
