import { execa } from 'execa';
import { renderRestoreInput } from './render.ts';
import type { RuleSet } from './rules.ts';

/** Runs a program with `input` on stdin; rejects when it fails. */
export type RunWithInput = (file: string, args: readonly string[], input: string) => Promise<void>;

export interface ApplyOptions {
  /** The iptables-restore binary (a path, or a name looked up in PATH). */
  restoreBinary?: string;
  run?: RunWithInput;
}

/** Rejects with execa's error, which carries the tool's stderr. */
const runWithInput: RunWithInput = async (file, args, input) => {
  await execa(file, args, { input, stdout: 'ignore', timeout: 60_000, forceKillAfterDelay: 5000, maxBuffer: 1024 * 1024 });
};

/**
 * Installs the rule set in one `iptables-restore --noflush` call, so either
 * every rule is in place or none is (iptables-restore commits per table).
 * A failure is a runtime error (exit 1): the flags were fine, the host said no.
 */
export async function applyCaptureRules(ruleSet: RuleSet, options: ApplyOptions = {}): Promise<void> {
  const binary = options.restoreBinary ?? 'iptables-restore';
  const run = options.run ?? runWithInput;
  try {
    await run(binary, ['--noflush'], renderRestoreInput(ruleSet));
  } catch (error) {
    throw new Error(`${binary} failed: ${firstLine(error)}`, { cause: error });
  }
}

function firstLine(error: unknown): string {
  const stderr = (error as { stderr?: unknown }).stderr;
  const text = typeof stderr === 'string' && stderr.trim() !== '' ? stderr : String((error as Error).message ?? error);
  return text.trim().split('\n')[0] ?? '';
}
