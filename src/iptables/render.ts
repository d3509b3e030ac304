import type { Rule, Table } from './plan.ts';

const builtInChains = new Set(['INPUT', 'OUTPUT', 'FORWARD', 'PREROUTING', 'POSTROUTING']);
const builtInTargets = new Set(['ACCEPT', 'RETURN', 'DROP', 'REJECT', 'REDIRECT', 'TPROXY', 'MARK', 'CONNMARK', 'CT', 'LOG']);
const tableOrder: readonly Table[] = ['filter', 'mangle', 'nat', 'raw'];

/** The rule as a line of iptables-restore input: `-A chain spec` or `-I chain n spec`. */
export function ruleLine(rule: Rule): string {
  const head = rule.insertAt === undefined ? ['-A', rule.chain] : ['-I', rule.chain, String(rule.insertAt)];
  return [...head, ...rule.spec].join(' ');
}

/** The target of `-j`, if any. */
export function jumpTarget(spec: readonly string[]): string | undefined {
  const index = spec.lastIndexOf('-j');
  return index >= 0 ? spec[index + 1] : undefined;
}

export function isOwnChain(chain: string): boolean {
  return !builtInChains.has(chain) && !builtInTargets.has(chain);
}

/** Our chains of one table: those with rules and those jumped to, in order of first use. */
export function chainsOf(rules: readonly Rule[], table: Table): string[] {
  const chains = new Set<string>();
  for (const rule of rules.filter((candidate) => candidate.table === table)) {
    for (const chain of [rule.chain, jumpTarget(rule.spec)]) if (chain !== undefined && isOwnChain(chain)) chains.add(chain);
  }
  return [...chains];
}

export function tablesOf(rules: readonly Rule[]): Table[] {
  return tableOrder.filter((table) => rules.some((rule) => rule.table === table));
}

/**
 * The input for `iptables-restore --noflush`, one block per table: declaring
 * our chains creates them (or empties them on a second run) while the
 * built-in chains keep whatever else is in the table. `extra` adds lines to
 * a table's block before its rules (the cleanup of an earlier run).
 */
export function renderRestoreInput(rules: readonly Rule[], extra: Partial<Record<Table, { chains: string[]; lines: string[] }>> = {}): string {
  const blocks = tableOrder.filter((table) => rules.some((rule) => rule.table === table) || extra[table]).map((table) => {
    const chains = [...new Set([...(extra[table]?.chains ?? []), ...chainsOf(rules, table)])];
    return [
      `*${table}`,
      ...chains.map((chain) => `:${chain} - [0:0]`),
      ...(extra[table]?.lines ?? []),
      ...rules.filter((rule) => rule.table === table).map(ruleLine),
      'COMMIT',
    ].join('\n');
  });
  return blocks.length === 0 ? '' : `${blocks.join('\n')}\n`;
}

/** The same rules as one `iptables` command per line, for people reading them. */
export function renderCommands(rules: readonly Rule[], binary = 'iptables'): string {
  const lines = tablesOf(rules).flatMap((table) => [
    ...chainsOf(rules, table).map((chain) => `${binary} -t ${table} -N ${chain}`),
    ...rules.filter((rule) => rule.table === table).map((rule) => `${binary} -t ${table} ${ruleLine(rule)}`),
  ]);
  return lines.length === 0 ? '' : `${lines.join('\n')}\n`;
}
