import { chainsOf, renderRestoreInput, tablesOf } from './render.ts';
import type { Rule, Table } from './plan.ts';
import { cleanupLines, hasResidue, isInPlace, parseSave, type SavedState } from './state.ts';

/** Runs a program (with `input` on stdin); rejects when it fails, with its stderr. */
export type Exec = (file: string, args: readonly string[], input?: string) => Promise<{ stdout: string }>;

export type Family = 'v4' | 'v6';

/** The three programs of one family, after --force-iptables-binary. */
export interface Binaries {
  iptables: string;
  save: string;
  restore: string;
}

export function binariesFor(family: Family, variant: '' | 'legacy' | 'nft'): Binaries {
  const base = `${family === 'v4' ? 'iptables' : 'ip6tables'}${variant === '' ? '' : `-${variant}`}`;
  return { iptables: base, save: `${base}-save`, restore: `${base}-restore` };
}

export interface ApplyOptions {
  exec: Exec;
  binaries: Binaries;
  reconcile: boolean;
  forceApply: boolean;
}

/** What happened to one family's rules. */
export type ApplyOutcome = 'applied' | 'in-place' | 'replaced' | 'removed' | 'clean';

/**
 * Installs one family's rules in one `iptables-restore --noflush` call, so
 * either every rule is in place or none is (it commits per table). Rules of
 * an earlier run: kept when they are these rules, replaced in the same call
 * with --reconcile or --force-apply, and otherwise a runtime error (exit 1),
 * as a restarted init container with other flags must not stack two rule sets.
 */
export async function applyRules(rules: readonly Rule[], options: ApplyOptions): Promise<ApplyOutcome> {
  const state = await readState(options);
  if (!hasResidue(state)) {
    await restore(renderRestoreInput(rules), options);
    return 'applied';
  }
  if (!options.forceApply && (await isInPlace(state, rules, (rule) => ruleExists(rule, options)))) return 'in-place';
  if (!options.reconcile && !options.forceApply) {
    throw new Error(
      `${options.binaries.iptables}: the ISTIO_ rules of an earlier run differ from these; rerun with --reconcile to replace them, or ` +
        `--cleanup-only to remove them`,
    );
  }
  await restore(renderRestoreInput(rules, await cleanupFor(state, rules, options, false)), options);
  return 'replaced';
}

/** --cleanup-only: removes every ISTIO_ chain and jump, and the planned built-in rules found. */
export async function removeRules(rules: readonly Rule[], options: ApplyOptions): Promise<ApplyOutcome> {
  const state = await readState(options);
  const extra = await cleanupFor(state, rules, options, true);
  if (Object.values(extra).every((block) => block.lines.length === 0)) return 'clean';
  await restore(renderRestoreInput([], extra), options);
  return 'removed';
}

async function cleanupFor(state: SavedState, rules: readonly Rule[], options: ApplyOptions, removeAll: boolean) {
  const present: Rule[] = [];
  for (const rule of rules) if (!rule.chain.startsWith('ISTIO_') && (await ruleExists(rule, options))) present.push(rule);
  const tables = new Set<Table>([...tablesOf(rules), ...([...state.keys()] as Table[])]);
  const extra: Partial<Record<Table, { chains: string[]; lines: string[] }>> = {};
  for (const table of tables) {
    const block = cleanupLines(state, table, present, removeAll ? [] : chainsOf(rules, table));
    if (block.chains.length > 0 || block.lines.length > 0) extra[table] = block;
  }
  return extra;
}

/** iptables-save; a failure reads as a clean state, as Istio takes it. */
async function readState(options: ApplyOptions): Promise<SavedState> {
  try {
    return parseSave((await options.exec(options.binaries.save, [])).stdout);
  } catch {
    return new Map();
  }
}

async function ruleExists(rule: Rule, options: ApplyOptions): Promise<boolean> {
  try {
    await options.exec(options.binaries.iptables, ['-t', rule.table, '-C', rule.chain, ...rule.spec]);
    return true;
  } catch {
    return false;
  }
}

async function restore(input: string, options: ApplyOptions): Promise<void> {
  if (input === '') return;
  try {
    await options.exec(options.binaries.restore, ['--noflush'], input);
  } catch (error) {
    throw new Error(`${options.binaries.restore} failed: ${firstLine(error)}`, { cause: error });
  }
}

/** Whether a program runs at all (`--version`); false when missing. */
export async function hasBinary(binary: string, exec: Exec): Promise<boolean> {
  try {
    await exec(binary, ['--version']);
    return true;
  } catch {
    return false;
  }
}

export function firstLine(error: unknown): string {
  const stderr = (error as { stderr?: unknown }).stderr;
  const text = typeof stderr === 'string' && stderr.trim() !== '' ? stderr : String((error as Error).message ?? error);
  return text.trim().split('\n')[0] ?? '';
}
