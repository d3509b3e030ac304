import { isOwnChain, jumpTarget, ruleLine } from './render.ts';
import type { Rule, Table } from './plan.ts';

/** What iptables-save shows: per table, each chain's rule lines (`-A chain …`). */
export type SavedState = Map<string, Map<string, string[]>>;

/** Parses iptables-save output; comments, counters and policies are dropped. */
export function parseSave(text: string): SavedState {
  const state: SavedState = new Map();
  let table: Map<string, string[]> | undefined;
  for (const line of text.split('\n').map((entry) => entry.trim())) {
    if (line.startsWith('*')) {
      table = new Map();
      state.set(line.slice(1).trim(), table);
    } else if (table && line.startsWith(':')) {
      table.set(line.slice(1).split(' ')[0]!, []);
    } else if (table && line.startsWith('-A ')) {
      const chain = line.split(' ')[1]!;
      if (!table.has(chain)) table.set(chain, []);
      table.get(chain)!.push(line);
    }
  }
  return state;
}

const isIstioChain = (chain: string) => chain.startsWith('ISTIO_');

/** Istio's chains of a table. */
export function istioChains(state: SavedState, table: string): string[] {
  return [...(state.get(table)?.keys() ?? [])].filter(isIstioChain);
}

/** Rules of built-in chains that jump into an ISTIO_ chain. */
export function istioJumps(state: SavedState, table: string): string[] {
  return [...(state.get(table)?.entries() ?? [])]
    .filter(([chain]) => !isIstioChain(chain))
    .flatMap(([, lines]) => lines.filter((line) => isIstioChain(jumpTarget(line.split(' ')) ?? '')));
}

/** Whether an earlier run (ours or Istio's) left anything behind. */
export function hasResidue(state: SavedState): boolean {
  return [...state.keys()].some((table) => istioChains(state, table).length > 0 || istioJumps(state, table).length > 0);
}

/**
 * Whether the saved state already is the plan, as Istio decides it: the same
 * ISTIO_ chains with as many rules each, and every planned rule present
 * (`exists` asks iptables itself, `-C`, since iptables-save rewrites rules).
 */
export async function isInPlace(state: SavedState, rules: readonly Rule[], exists: (rule: Rule) => Promise<boolean>): Promise<boolean> {
  const planned = new Map<string, number>();
  for (const rule of rules) {
    for (const chain of [rule.chain, jumpTarget(rule.spec)]) {
      if (chain !== undefined && isIstioChain(chain) && !planned.has(`${rule.table} ${chain}`)) planned.set(`${rule.table} ${chain}`, 0);
    }
    if (isIstioChain(rule.chain)) planned.set(`${rule.table} ${rule.chain}`, planned.get(`${rule.table} ${rule.chain}`)! + 1);
  }
  const saved = new Map<string, number>();
  for (const table of state.keys()) for (const chain of istioChains(state, table)) saved.set(`${table} ${chain}`, state.get(table)!.get(chain)!.length);
  if (planned.size !== saved.size || [...planned].some(([key, count]) => saved.get(key) !== count)) return false;
  for (const rule of rules) if (!(await exists(rule))) return false;
  return true;
}

/**
 * The lines that remove an earlier run from one table, for the same
 * iptables-restore call that writes the new rules (so the pod is never
 * half-captured): its ISTIO_ chains are declared (which empties them), every
 * jump into them from a built-in chain is deleted, the planned built-in rules
 * that are already there (`present`) are deleted so they are not doubled,
 * and the chains the plan does not use are removed.
 */
export function cleanupLines(state: SavedState, table: Table, present: readonly Rule[], keep: readonly string[]): { chains: string[]; lines: string[] } {
  const chains = istioChains(state, table);
  const jumps = istioJumps(state, table).map((line) => line.replace(/^-A /, '-D '));
  const doubles = present
    .filter((rule) => rule.table === table && !isOwnChain(rule.chain) && !isIstioChain(jumpTarget(rule.spec) ?? ''))
    .map((rule) => ruleLine({ ...rule, insertAt: undefined }).replace(/^-A /, '-D '));
  const removed = chains.filter((chain) => !keep.includes(chain)).map((chain) => `-X ${chain}`);
  return { chains, lines: [...jumps, ...doubles, ...removed] };
}
