/**
 * The shapes of a capture plan and the builder that collects its rules per
 * family, shared by the rule files (rules.ts, dns-rules.ts, tproxy-rules.ts,
 * ipv6-reject.ts).
 */
export type Table = 'filter' | 'mangle' | 'nat' | 'raw';

/** One rule: appended (`-A chain spec`) or inserted (`-I chain position spec`). */
export interface Rule {
  table: Table;
  chain: string;
  spec: readonly string[];
  /** Set for `-I`: the 1-based position. */
  insertAt?: number;
}

/** The rules of each family; v6 is empty when nothing is written with ip6tables. */
export interface CapturePlan {
  v4: readonly Rule[];
  v6: readonly Rule[];
}

/**
 * What the pod's addresses ask of IPv6: `capture` as IPv4 is (Istio, for an
 * IPv6-only pod or with dual stack), `reject` new inbound IPv6 connections
 * on every port IPv4 captures (a dual-stack pod without dual stack, which
 * Istio leaves open), or `none` (no IPv6 address).
 */
export type Ipv6Mode = 'capture' | 'reject' | 'none';

/** What the host tells us beyond the flags. */
export interface HostFacts {
  ipv6: Ipv6Mode;
  /** Name servers of /etc/resolv.conf, read only for DNS capture without --capture-all-dns. */
  dnsServersV4: readonly string[];
  dnsServersV6: readonly string[];
}

export const Chain = {
  inbound: 'ISTIO_INBOUND',
  inRedirect: 'ISTIO_IN_REDIRECT',
  output: 'ISTIO_OUTPUT',
  outputDns: 'ISTIO_OUTPUT_DNS',
  redirect: 'ISTIO_REDIRECT',
  divert: 'ISTIO_DIVERT',
  tproxy: 'ISTIO_TPROXY',
  drop: 'ISTIO_DROP',
  /** Ours, not Istio's: where a dual-stack pod without dual stack refuses inbound IPv6. */
  inboundReject: 'ISTIO_INBOUND_REJECT',
} as const;


export type Family = 'v4' | 'v6';

/** The family-specific addresses Istio writes in otherwise shared rules. */
export interface FamilyAddresses {
  loopback: string;
  inboundSource: string;
  hostBits: number;
}

/**
 * Collects rules per family in the order Istio adds them, so our
 * iptables-save output can be read beside Istio's golden files line by line.
 */
export class PlanBuilder {
  readonly v4: Rule[] = [];
  readonly v6: Rule[] = [];
  readonly addresses: Record<Family, FamilyAddresses>;
  private readonly ipv6: boolean;

  constructor(ipv6: boolean, addresses: Record<Family, FamilyAddresses>) {
    this.ipv6 = ipv6;
    this.addresses = addresses;
  }

  add(family: Family | 'both', table: Table, chain: string, spec: readonly string[], insertAt?: number): void {
    const rule = insertAt === undefined ? { table, chain, spec } : { table, chain, spec, insertAt };
    if (family !== 'v6') this.v4.push(rule);
    if (family !== 'v4' && this.ipv6) this.v6.push(rule);
  }

  /** The same rule in both families with a family-specific address or range. */
  versioned(table: Table, chain: string, spec: (address: FamilyAddresses) => string[]): void {
    this.add('v4', table, chain, spec(this.addresses.v4));
    this.add('v6', table, chain, spec(this.addresses.v6));
  }
}

