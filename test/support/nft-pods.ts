/**
 * What the native nftables tests add to test/support/iptables-pods.ts: the
 * namespace's ruleset as `nft list ruleset` prints it (counters zeroed, so
 * two runs compare), and the iptables rules of both variants, which a
 * native-only pod must not have.
 */
import { execa } from 'execa';
import { iptablesSkipReason } from './iptables-pods.ts';

/** Why the nftables tests cannot run here, or undefined when they can. */
export async function nftSkipReason(): Promise<string | undefined> {
  const reason = await iptablesSkipReason();
  if (reason !== undefined) return reason;
  const nft = await execa('nft', ['--version'], { reject: false, timeout: 10_000 });
  return nft.exitCode === 0 ? undefined : 'nft is missing (run scripts/setup-iptables.sh, which installs nftables)';
}

/** `nft list ruleset` of the namespace, with every counter at zero. */
export async function nftRuleset(ns: string): Promise<string> {
  const { stdout } = await execa('ip', ['netns', 'exec', ns, 'nft', 'list', 'ruleset'], { timeout: 10_000 });
  return stdout.replace(/counter packets \d+ bytes \d+/g, 'counter packets 0 bytes 0');
}

/** The rule lines (`-A …`) of iptables-legacy and iptables-nft, IPv4 and IPv6, in the namespace. */
export async function iptablesRuleLines(ns: string): Promise<string[]> {
  const lines: string[] = [];
  for (const save of ['iptables-legacy-save', 'iptables-nft-save', 'ip6tables-legacy-save', 'ip6tables-nft-save']) {
    const result = await execa('ip', ['netns', 'exec', ns, save], { reject: false, timeout: 10_000 });
    lines.push(...result.stdout.split('\n').filter((line) => line.startsWith('-A ')).map((line) => `${save}: ${line}`));
  }
  return lines;
}
