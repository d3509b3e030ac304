import { nftTables, tableChains, type NftRule, type NftTableName } from './plan.ts';

/**
 * The `nft -f` input that makes the three tables hold exactly `rules`, as
 * one transaction: the kernel applies all of it or none. A table with rules
 * is removed and written afresh (so nothing of an earlier run, not even an
 * empty chain, stays); a table without rules is removed. `add` before
 * `delete` makes the delete valid whether or not the table exists.
 */
export function renderTransaction(rules: readonly NftRule[]): string {
  const lines = nftTables.flatMap((table) => {
    const own = rules.filter((rule) => rule.table === table);
    return own.length === 0 ? removeTable(table) : [...removeTable(table), `add table inet ${table}`, ...chainLines(table, own), ...ruleLines(own)];
  });
  return `${lines.join('\n')}\n`;
}

/** --cleanup-only: the three tables removed, whatever they hold. */
export function renderCleanup(): string {
  return `${nftTables.flatMap(removeTable).join('\n')}\n`;
}

function removeTable(table: NftTableName): string[] {
  return [`add table inet ${table}`, `delete table inet ${table}`];
}

/** The chains that hold a rule or are jumped to, in the table's order; base chains with their hook. */
function chainLines(table: NftTableName, rules: readonly NftRule[]): string[] {
  const used = new Set(rules.flatMap((rule) => [rule.chain, / (?:jump|goto) (\S+)/.exec(rule.rule)?.[1]]));
  return tableChains[table].filter((chain) => used.has(chain.name)).map((chain) =>
    chain.base === undefined ? `add chain inet ${table} ${chain.name}` : `add chain inet ${table} ${chain.name} { ${chain.base} }`);
}

/**
 * nft counts rules from 0 and refuses an index past a chain's end, where
 * iptables' `-I` would append: such an insert becomes an append, as Istio
 * writes it.
 */
function ruleLines(rules: readonly NftRule[]): string[] {
  const counts = new Map<string, number>();
  return rules.map(({ table, chain, rule, index }) => {
    const count = counts.get(chain) ?? 0;
    counts.set(chain, count + 1);
    return index === undefined || index >= count ? `add rule inet ${table} ${chain} ${rule}` : `insert rule inet ${table} ${chain} index ${index} ${rule}`;
  });
}
