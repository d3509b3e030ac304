import { firstLine, type Exec } from '../iptables/apply.ts';
import { hasResidue, parseSave } from '../iptables/state.ts';
import { nftTables, type NftRule } from './plan.ts';
import { renderCleanup, renderTransaction } from './render.ts';

/** Writes the rules in one `nft -f -` transaction: every table is as planned, or nothing changed. */
export async function applyNftRules(rules: readonly NftRule[], exec: Exec): Promise<void> {
  await runNft(renderTransaction(rules), exec);
}

/** --cleanup-only: the three tables removed in one transaction; anything else in the ruleset is left alone. */
export async function removeNftRules(exec: Exec): Promise<void> {
  await runNft(renderCleanup(), exec);
}

async function runNft(input: string, exec: Exec): Promise<void> {
  try {
    await exec('nft', ['-f', '-'], input);
  } catch (error) {
    throw new Error(`nft -f - failed: ${firstLine(error)}`, { cause: error });
  }
}

/** Our tables that `nft list tables` shows: the native capture of an earlier run. */
export async function nftTablesPresent(exec: Exec): Promise<string[]> {
  let listed: string;
  try {
    listed = (await exec('nft', ['list', 'tables'])).stdout;
  } catch {
    return [];
  }
  const names = new Set(listed.split('\n').map((line) => /^table inet (\S+)$/.exec(line.trim())?.[1]));
  return nftTables.filter((table) => names.has(table));
}

/** Each iptables variant's save program, by the name a line gives it. */
const iptablesSaves = ['iptables-legacy-save', 'iptables-nft-save', 'ip6tables-legacy-save', 'ip6tables-nft-save'] as const;

/**
 * The iptables variants holding ISTIO_ rules in this network namespace (an
 * earlier run of the iptables mode). A variant whose program is missing, or
 * fails, holds none that we can see.
 */
export async function iptablesResidue(exec: Exec): Promise<string[]> {
  const found: string[] = [];
  for (const save of iptablesSaves) {
    try {
      if (hasResidue(parseSave((await exec(save, [])).stdout))) found.push(save.replace(/-save$/, ''));
    } catch {
      // Not installed, or the kernel lacks that variant's tables: nothing of ours there.
    }
  }
  return found;
}
