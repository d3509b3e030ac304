import type { RuleSet } from './rules.ts';

/**
 * The input for `iptables-restore --noflush`: declaring our chains creates
 * them (or empties them on a second run) while the built-in chains keep
 * whatever else is in the table.
 */
export function renderRestoreInput(ruleSet: RuleSet): string {
  const lines = [
    `*${ruleSet.table}`,
    ...ruleSet.chains.map((chain) => `:${chain} - [0:0]`),
    ...ruleSet.rules.map((rule) => `-A ${rule.chain} ${rule.spec.join(' ')}`),
    'COMMIT',
  ];
  return `${lines.join('\n')}\n`;
}

/** The same rule set as one `iptables` command per line, for people reading it. */
export function renderCommands(ruleSet: RuleSet): string {
  const table = `iptables -t ${ruleSet.table}`;
  const lines = [
    ...ruleSet.chains.map((chain) => `${table} -N ${chain}`),
    ...ruleSet.rules.map((rule) => `${table} -A ${rule.chain} ${rule.spec.join(' ')}`),
  ];
  return `${lines.join('\n')}\n`;
}
