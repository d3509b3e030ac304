import { Command, CommanderError } from 'commander';
import { AgentError, ExitCode, describe } from '../shared/errors.ts';
import { injectCommand } from './commands/inject.ts';
import { istioIptablesCommand } from './commands/istio-iptables.ts';
import { proxyCommand } from './commands/proxy.ts';
import { requestCommand } from './commands/request.ts';
import { versionCommand } from './commands/version.ts';
import { waitCommand } from './commands/wait.ts';
import type { CommandContext } from './context.ts';
import { processGuard } from '../runtime/process-guard.ts';

/** Builds the whole command tree. Each subcommand lives in `commands/<name>.ts`. */
export function buildProgram(context: CommandContext): Command {
  const program = new Command('pilot-agent')
    .description('Sidecar agent for Envoy: bootstrap, lifecycle, xDS relay and status')
    .showHelpAfterError(false)
    .exitOverride()
    .configureOutput({ writeErr: (text) => context.stderr.write(text), writeOut: (text) => context.stdout.write(text) });
  for (const make of [proxyCommand, versionCommand, requestCommand, waitCommand, injectCommand, istioIptablesCommand]) {
    program.addCommand(make(context).exitOverride());
  }
  return program;
}

/**
 * Runs the CLI and resolves to the exit code. Bad usage, bad config and
 * rejected bootstraps are one line on stderr and code 2; the stack trace is
 * printed only when debug logging is asked for.
 */
export async function runCli(argv: readonly string[], context: CommandContext): Promise<number> {
  try {
    await buildProgram(context).parseAsync([...argv], { from: 'user' });
    return context.exitCode ?? ExitCode.ok;
  } catch (error) {
    return reportFailure(error, context);
  }
}

function reportFailure(error: unknown, context: CommandContext): number {
  if (error instanceof CommanderError) {
    // Help and version print to stdout and end with code 0.
    if (error.exitCode === 0) return ExitCode.ok;
    // Commander already printed its one-line message.
    return ExitCode.usage;
  }
  const line = `pilot-agent: ${describe(error)}\n`;
  context.stderr.write(line);
  if (context.debug && error instanceof Error && error.stack) context.stderr.write(`${error.stack}\n`);
  return error instanceof AgentError ? error.exitCode : ExitCode.runtime;
}

/** The process entry point: the only place that calls process.exit. */
export async function main(): Promise<never> {
  // First: no fault and no signal may end the process without a line (and without stopping Envoy).
  processGuard.install();
  const context: CommandContext = {
    stdout: process.stdout,
    stderr: process.stderr,
    env: process.env,
    debug: wantsDebug(process.argv),
  };
  const code = await runCli(process.argv.slice(2), context);
  // A fault already decided the exit (1) and is stopping Envoy: its exit, not this one.
  if (processGuard.exitCode !== undefined) return new Promise<never>(() => undefined);
  process.exit(code);
}

/** Stack traces are for debug logging only: `--log_output_level` with debug or trace. */
function wantsDebug(argv: readonly string[]): boolean {
  const index = argv.findIndex((arg) => arg.startsWith('--log_output_level'));
  if (index < 0) return false;
  const value = argv[index]!.includes('=') ? argv[index]!.split('=')[1] : argv[index + 1];
  return /debug|trace/.test(value ?? '');
}
