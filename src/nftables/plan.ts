/**
 * The shapes of a native nftables capture: three `inet` tables named as
 * Istio's (tools/istio-nftables), each with two base chains hooked where
 * iptables' nat, mangle and raw tables hook, and Istio's own chains. One
 * `inet` table sees IPv4 and IPv6 alike; only rules naming an address
 * (`ip daddr`, `ip6 saddr`) are per family.
 */
export const NftTable = { nat: 'istio-proxy-nat', mangle: 'istio-proxy-mangle', raw: 'istio-proxy-raw' } as const;

export type NftTableName = (typeof NftTable)[keyof typeof NftTable];

/** The tables in the order a transaction writes them. */
export const nftTables: readonly NftTableName[] = [NftTable.nat, NftTable.mangle, NftTable.raw];

export const NftChain = {
  prerouting: 'prerouting',
  output: 'output',
  inbound: 'istio-inbound',
  istioOutput: 'istio-output',
  outputDns: 'istio-output-dns',
  redirect: 'istio-redirect',
  inRedirect: 'istio-in-redirect',
  divert: 'istio-divert',
  tproxy: 'istio-tproxy',
  drop: 'istio-drop',
} as const;

/** A chain a table may hold; base chains carry their hook (`type … hook … priority …`). */
export interface ChainSpec {
  name: string;
  base?: string;
}

/**
 * Each table's chains, in the order they are declared. The priorities are
 * iptables' own (dstnat -100, mangle -150, raw -300), so a native rule runs
 * where the iptables rule it replaces would.
 */
export const tableChains: Readonly<Record<NftTableName, readonly ChainSpec[]>> = {
  [NftTable.nat]: [
    { name: NftChain.prerouting, base: 'type nat hook prerouting priority -100 ;' },
    { name: NftChain.output, base: 'type nat hook output priority -100 ;' },
    { name: NftChain.inbound },
    { name: NftChain.redirect },
    { name: NftChain.inRedirect },
    { name: NftChain.istioOutput },
    { name: NftChain.outputDns },
  ],
  [NftTable.mangle]: [
    { name: NftChain.prerouting, base: 'type filter hook prerouting priority -150 ;' },
    // A route chain: a mark set on output makes the kernel route the packet again (TPROXY's marks).
    { name: NftChain.output, base: 'type route hook output priority -150 ;' },
    { name: NftChain.divert },
    { name: NftChain.tproxy },
    { name: NftChain.inbound },
    { name: NftChain.drop },
  ],
  [NftTable.raw]: [
    { name: NftChain.prerouting, base: 'type filter hook prerouting priority -300 ;' },
    { name: NftChain.output, base: 'type filter hook output priority -300 ;' },
    { name: NftChain.inbound },
    { name: NftChain.outputDns },
  ],
};

/** One rule: appended, or inserted before the rule at `index` (0-based, as nft counts). */
export interface NftRule {
  table: NftTableName;
  chain: string;
  rule: string;
  index?: number;
}

/** Collects rules in the order Istio adds them; IPv6-only rules only when IPv6 is captured. */
export class NftBuilder {
  readonly rules: NftRule[] = [];
  readonly ipv6: boolean;

  constructor(ipv6: boolean) {
    this.ipv6 = ipv6;
  }

  add(table: NftTableName, chain: string, ...parts: string[]): void {
    this.rules.push({ table, chain, rule: parts.join(' ') });
  }

  add6(table: NftTableName, chain: string, ...parts: string[]): void {
    if (this.ipv6) this.add(table, chain, ...parts);
  }

  insert(table: NftTableName, chain: string, index: number, ...parts: string[]): void {
    this.rules.push({ table, chain, rule: parts.join(' '), index });
  }

  insert6(table: NftTableName, chain: string, index: number, ...parts: string[]): void {
    if (this.ipv6) this.insert(table, chain, index, ...parts);
  }
}
