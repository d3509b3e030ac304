import type { CaptureConfig } from './config.ts';
import type { CidrLists } from './ports.ts';

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

/** The agent's DNS proxy port (Istio's IstioAgentDNSListenerPort). */
export const dnsProxyPort = '15053';
/** The mark Envoy's outbound traffic to its own inbound gets under TPROXY. */
const outboundMark = '1338';

type Family = 'v4' | 'v6';

/** The family-specific addresses Istio writes in otherwise shared rules. */
interface FamilyAddresses {
  loopback: string;
  inboundSource: string;
  hostBits: number;
}

/**
 * Collects rules per family in the order Istio adds them, so our
 * iptables-save output can be read beside Istio's golden files line by line.
 */
class PlanBuilder {
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

/**
 * Builds Istio's capture (tools/istio-iptables/pkg/capture): inbound TCP
 * through ISTIO_INBOUND to the inbound capture port (REDIRECT in nat, or
 * TPROXY in mangle), outbound through ISTIO_OUTPUT to the outbound port,
 * except the proxy's own traffic (by UID and GID), loopback, the tunnel
 * port and whatever the flags exclude; optionally DNS to the agent.
 */
export function buildCapturePlan(config: CaptureConfig, host: HostFacts): CapturePlan {
  const plan = new PlanBuilder(host.ipv6 === 'capture', {
    v4: { loopback: config.loopbackCidr, inboundSource: '127.0.0.6/32', hostBits: 32 },
    v6: { loopback: '::1/128', inboundSource: '::6/128', hostBits: 128 },
  });
  const dns = dnsPlan(config, host);
  excludedInterfaceRules(plan, config);
  for (const name of config.virtualInterfaces) plan.add('both', 'nat', 'PREROUTING', ['-i', name, '-j', 'RETURN'], 1);
  if (config.dropInvalid) {
    plan.add('both', 'mangle', 'PREROUTING', ['-m', 'conntrack', '--ctstate', 'INVALID', '-j', Chain.drop]);
    plan.add('both', 'mangle', Chain.drop, ['-j', 'DROP']);
  }
  // Envoy's tunnel (HBONE) listener authenticates its peers itself.
  plan.add('both', 'nat', Chain.inbound, ['-p', 'tcp', '--dport', String(config.inboundTunnelPort), '-j', 'RETURN']);
  plan.add('both', 'nat', Chain.redirect, ['-p', 'tcp', '-j', 'REDIRECT', '--to-ports', String(config.outboundCapturePort)]);
  plan.add('both', 'nat', Chain.inRedirect, ['-p', 'tcp', '-j', 'REDIRECT', '--to-ports', String(config.inboundCapturePort)]);
  inboundRules(plan, config);
  // No `-p tcp`: ISTIO_OUTPUT also sees the app's UDP, for DNS capture.
  plan.add('both', 'nat', 'OUTPUT', ['-j', Chain.output]);
  for (const port of config.excludedOutboundPorts) {
    plan.add('both', 'nat', Chain.output, ['-p', 'tcp', '--dport', String(port), '-j', 'RETURN']);
    plan.add('both', 'nat', Chain.output, ['-p', 'udp', '--dport', String(port), '-j', 'RETURN']);
  }
  // Envoy passing inbound traffic on to the app must not loop back into Envoy.
  plan.versioned('nat', Chain.output, (family) => ['-o', 'lo', '-s', family.inboundSource, '-j', 'RETURN']);
  const loopbackIncluded = config.includedOutboundCidrs !== '*' && [...config.includedOutboundCidrs.v4, ...config.includedOutboundCidrs.v6].some(isLoopback);
  for (const uid of config.proxyUids) ownerRules(plan, config, { match: '--uid-owner', id: uid, dns: dns.enabled, loopbackIncluded });
  // Istio leaves port 53 in the GID self-call redirect; only the UID one skips it.
  for (const gid of config.proxyGids) ownerRules(plan, config, { match: '--gid-owner', id: gid, dns: false, returnDns: dns.enabled, loopbackIncluded });
  ownerGroupRules(plan, config);
  if (dns.enabled) dnsRules(plan, config, host, dns.captureAll);
  // Envoy-aware apps and container-to-container calls use localhost on purpose.
  plan.versioned('nat', Chain.output, (family) => ['-d', family.loopback, '-j', 'RETURN']);
  for (const cidr of config.excludedOutboundCidrs.v4) plan.add('v4', 'nat', Chain.output, ['-d', cidr, '-j', 'RETURN']);
  for (const cidr of config.excludedOutboundCidrs.v6) plan.add('v6', 'nat', Chain.output, ['-d', cidr, '-j', 'RETURN']);
  for (const port of config.includedOutboundPorts) plan.add('both', 'nat', Chain.output, ['-p', 'tcp', '--dport', String(port), '-j', Chain.redirect]);
  outboundIncludeRules(plan, config, 'v4');
  outboundIncludeRules(plan, config, 'v6');
  if (config.mode === 'TPROXY') tproxyTailRules(plan, config);
  const v6 = host.ipv6 === 'reject' ? ipv6RejectRules(config) : plan.v6;
  return { v4: plan.v4, v6 };
}

function isLoopback(cidr: string): boolean {
  return cidr.startsWith('127.') || cidr === '::1/128';
}

/** Whether DNS capture is on: Istio turns it off when there is no server to capture. */
export function dnsPlan(config: CaptureConfig, host: HostFacts): { enabled: boolean; captureAll: boolean } {
  const servers = host.dnsServersV4.length + host.dnsServersV6.length;
  return { enabled: config.redirectDns && (config.captureAllDns || servers > 0), captureAll: config.captureAllDns };
}

function excludedInterfaceRules(plan: PlanBuilder, config: CaptureConfig): void {
  const tables: Table[] = config.mode === 'TPROXY' ? ['nat', 'mangle'] : ['nat'];
  for (const table of tables) {
    for (const name of config.excludedInterfaces) {
      plan.add('both', table, 'PREROUTING', ['-i', name, '-j', 'RETURN']);
      plan.add('both', table, 'OUTPUT', ['-o', name, '-j', 'RETURN']);
    }
  }
}

/** No inbound ports: no jump from PREROUTING at all, as in Istio. */
function inboundRules(plan: PlanBuilder, config: CaptureConfig): void {
  const { inboundPorts } = config;
  if (inboundPorts !== '*' && inboundPorts.length === 0) return;
  const tproxy = config.mode === 'TPROXY';
  const table: Table = tproxy ? 'mangle' : 'nat';
  if (tproxy) {
    // Marked packets are routed to loopback (see routes.ts), where TPROXY hands them to Envoy.
    plan.add('both', 'mangle', Chain.divert, ['-j', 'MARK', '--set-mark', String(config.tproxyMark)]);
    plan.add('both', 'mangle', Chain.divert, ['-j', 'ACCEPT']);
    plan.versioned('mangle', Chain.tproxy, (family) => ['!', '-d', family.loopback, '-p', 'tcp', '-j', 'TPROXY', '--tproxy-mark', `${config.tproxyMark}/0xffffffff`, '--on-port', String(config.inboundCapturePort)]);
  }
  plan.add('both', table, 'PREROUTING', ['-p', 'tcp', '-j', Chain.inbound]);
  const established = ['-m', 'conntrack', '--ctstate', 'RELATED,ESTABLISHED', '-j', Chain.divert];
  if (inboundPorts === '*') {
    for (const port of config.excludedInboundPorts) plan.add('both', table, Chain.inbound, ['-p', 'tcp', '--dport', String(port), '-j', 'RETURN']);
    if (tproxy) {
      plan.add('both', 'mangle', Chain.inbound, ['-p', 'tcp', ...established]);
      plan.add('both', 'mangle', Chain.inbound, ['-p', 'tcp', '-j', Chain.tproxy]);
    } else {
      plan.add('both', 'nat', Chain.inbound, ['-p', 'tcp', '-j', Chain.inRedirect]);
    }
    return;
  }
  for (const port of inboundPorts) {
    const dport = ['-p', 'tcp', '--dport', String(port)];
    if (tproxy) {
      plan.add('both', 'mangle', Chain.inbound, [...dport, ...established]);
      plan.add('both', 'mangle', Chain.inbound, [...dport, '-j', Chain.tproxy]);
    } else {
      plan.add('both', 'nat', Chain.inbound, [...dport, '-j', Chain.inRedirect]);
    }
  }
}

interface OwnerOptions {
  match: '--uid-owner' | '--gid-owner';
  id: string;
  /** DNS capture: the self-call redirect skips port 53 (UID rules only, as Istio). */
  dns: boolean;
  /** DNS capture: the app's loopback TCP to port 53 is not returned. */
  returnDns?: boolean;
  loopbackIncluded: boolean;
}

/**
 * The proxy's own traffic is never captured as outbound (that would loop),
 * but when it calls the pod's own IP over loopback it is sent to the inbound
 * port so the call passes the server side too; never the tunnel port. The
 * app's loopback traffic stays uncaptured unless -i lists loopback.
 */
function ownerRules(plan: PlanBuilder, config: CaptureConfig, options: OwnerOptions): void {
  const { match, id } = options;
  const skipPorts = options.dns ? ['-m', 'multiport', '!', '--dports', `53,${config.inboundTunnelPort}`] : ['!', '--dport', String(config.inboundTunnelPort)];
  plan.versioned('nat', Chain.output, (family) => ['-o', 'lo', '!', '-d', family.loopback, '-p', 'tcp', ...skipPorts, '-m', 'owner', match, id, '-j', Chain.inRedirect]);
  if (!options.loopbackIncluded) {
    const dnsOnLoopback = options.dns || options.returnDns ? ['-p', 'tcp', '!', '--dport', '53'] : [];
    plan.add('both', 'nat', Chain.output, ['-o', 'lo', ...dnsOnLoopback, '-m', 'owner', '!', match, id, '-j', 'RETURN']);
  }
  // Protocol-independent: none of the proxy's own packets is captured.
  plan.add('both', 'nat', Chain.output, ['-m', 'owner', match, id, '-j', 'RETURN']);
}

function ownerGroupRules(plan: PlanBuilder, config: CaptureConfig): void {
  const { except, values } = config.ownerGroups;
  if (except) {
    for (const group of values) plan.add('both', 'nat', Chain.output, ['-m', 'owner', '--gid-owner', group, '-j', 'RETURN']);
    return;
  }
  plan.add('both', 'nat', Chain.output, [...values.flatMap((group) => ['-m', 'owner', '!', '--gid-owner', group]), '-j', 'RETURN']);
}

/**
 * The app's DNS (UDP and TCP 53) goes to the agent on 15053: to every server
 * with --capture-all-dns, else to those of /etc/resolv.conf. The proxy's own
 * queries were returned above by UID/GID, so its upstream lookups never loop.
 * In raw, conntrack zones keep the two legs of a UDP exchange apart.
 */
function dnsRules(plan: PlanBuilder, config: CaptureConfig, host: HostFacts, captureAll: boolean): void {
  const { v4: v4Bits, v6: v6Bits } = { v4: plan.addresses.v4.hostBits, v6: plan.addresses.v6.hostBits };
  plan.add('both', 'raw', 'OUTPUT', ['-j', Chain.outputDns]);
  if (captureAll || host.dnsServersV4.length > 0) plan.add('v4', 'nat', Chain.output, ['-j', Chain.outputDns]);
  if (captureAll || host.dnsServersV6.length > 0) plan.add('v6', 'nat', Chain.output, ['-j', Chain.outputDns]);
  for (const protocol of ['tcp', 'udp'] as const) {
    // Istio spells the target's option differently per protocol; kept so the rules read alike.
    const to = protocol === 'tcp' ? '--to-ports' : '--to-port';
    if (captureAll) {
      plan.add('both', 'nat', Chain.outputDns, ['-p', protocol, '--dport', '53', '-j', 'REDIRECT', to, dnsProxyPort]);
      continue;
    }
    for (const server of host.dnsServersV4) plan.add('v4', 'nat', Chain.outputDns, ['-p', protocol, '--dport', '53', '-d', `${server}/${v4Bits}`, '-j', 'REDIRECT', to, dnsProxyPort]);
    for (const server of host.dnsServersV6) plan.add('v6', 'nat', Chain.outputDns, ['-p', protocol, '--dport', '53', '-d', `${server}/${v6Bits}`, '-j', 'REDIRECT', to, dnsProxyPort]);
  }
  for (const [match, ids] of [['--uid-owner', config.proxyUids], ['--gid-owner', config.proxyGids]] as const) {
    for (const id of ids) {
      plan.add('both', 'raw', Chain.outputDns, ['-p', 'udp', '--dport', '53', '-m', 'owner', match, id, '-j', 'CT', '--zone', '1']);
      plan.add('both', 'raw', Chain.outputDns, ['-p', 'udp', '--sport', dnsProxyPort, '-m', 'owner', match, id, '-j', 'CT', '--zone', '2']);
    }
  }
  if (captureAll) {
    plan.add('both', 'raw', 'PREROUTING', ['-j', Chain.inbound]);
    plan.add('both', 'raw', Chain.outputDns, ['-p', 'udp', '--dport', '53', '-j', 'CT', '--zone', '2']);
    plan.add('both', 'raw', Chain.inbound, ['-p', 'udp', '--sport', '53', '-j', 'CT', '--zone', '1']);
    return;
  }
  for (const [family, servers, bits] of [['v4', host.dnsServersV4, v4Bits], ['v6', host.dnsServersV6, v6Bits]] as const) {
    if (servers.length > 0) plan.add(family, 'raw', 'PREROUTING', ['-j', Chain.inbound]);
    for (const server of servers) {
      plan.add(family, 'raw', Chain.outputDns, ['-p', 'udp', '--dport', '53', '-d', `${server}/${bits}`, '-j', 'CT', '--zone', '2']);
      plan.add(family, 'raw', Chain.inbound, ['-p', 'udp', '--sport', '53', '-s', `${server}/${bits}`, '-j', 'CT', '--zone', '1']);
    }
  }
}

/** '*' sends the rest to Envoy; a list sends only those ranges. -k interfaces' inbound counts as outbound. */
function outboundIncludeRules(plan: PlanBuilder, config: CaptureConfig, family: Family): void {
  const include = config.includedOutboundCidrs;
  const cidrs: CidrLists[Family] = include === '*' ? [] : include[family];
  if (include === '*') {
    plan.add(family, 'nat', Chain.output, ['-j', Chain.redirect]);
    for (const name of config.virtualInterfaces) plan.add(family, 'nat', 'PREROUTING', ['-i', name, '-j', Chain.redirect], 1);
    return;
  }
  for (const cidr of cidrs) {
    for (const name of config.virtualInterfaces) plan.add(family, 'nat', 'PREROUTING', ['-i', name, '-d', cidr, '-j', Chain.redirect], 1);
    plan.add(family, 'nat', Chain.output, ['-d', cidr, '-j', Chain.redirect]);
  }
}

/** TPROXY's marks: Envoy's own connections to the app are neither diverted nor looped. */
function tproxyTailRules(plan: PlanBuilder, config: CaptureConfig): void {
  const mark = String(config.tproxyMark);
  plan.add('both', 'mangle', 'PREROUTING', ['-p', 'tcp', '-m', 'mark', '--mark', mark, '-j', 'CONNMARK', '--save-mark']);
  plan.add('both', 'mangle', 'OUTPUT', ['-p', 'tcp', '-o', 'lo', '-m', 'mark', '--mark', mark, '-j', 'RETURN']);
  for (const [match, ids] of [['--uid-owner', config.proxyUids], ['--gid-owner', config.proxyGids]] as const) {
    for (const id of ids) {
      plan.versioned('mangle', 'OUTPUT', (family) => ['!', '-d', family.loopback, '-p', 'tcp', '-o', 'lo', '-m', 'owner', match, id, '-j', 'MARK', '--set-mark', outboundMark]);
    }
  }
  plan.add('both', 'mangle', 'OUTPUT', ['-p', 'tcp', '-m', 'connmark', '--mark', mark, '-j', 'CONNMARK', '--restore-mark']);
  plan.add('both', 'mangle', Chain.inbound, ['-p', 'tcp', '-m', 'mark', '--mark', mark, '-j', 'RETURN'], 1);
  plan.add('v4', 'mangle', Chain.inbound, ['-p', 'tcp', '-s', '127.0.0.6/32', '-i', 'lo', '-j', 'RETURN'], 2);
  plan.add('v6', 'mangle', Chain.inbound, ['-p', 'tcp', '-s', '::6/128', '-i', 'lo', '-j', 'RETURN'], 2);
  plan.add('both', 'mangle', Chain.inbound, ['-p', 'tcp', '-i', 'lo', '-m', 'mark', '!', '--mark', outboundMark, '-j', 'RETURN'], 3);
}

/**
 * Beyond Istio: a dual-stack pod whose IPv6 Istio leaves uncaptured. New
 * inbound IPv6 connections to every port IPv4 would capture are reset, so
 * none reaches the app around the sidecar's mTLS. Replies to the app's own
 * outbound IPv6 connections are not new (`--syn`) and pass; outbound IPv6
 * stays as Istio leaves it.
 */
export function ipv6RejectRules(config: CaptureConfig): Rule[] {
  const { inboundPorts } = config;
  if (inboundPorts !== '*' && inboundPorts.length === 0) return [];
  const rules: Rule[] = [];
  const add = (spec: string[], chain: string = Chain.inboundReject) => rules.push({ table: 'filter', chain, spec });
  const reject = ['--syn', '-j', 'REJECT', '--reject-with', 'tcp-reset'];
  add(['-p', 'tcp', '-j', Chain.inboundReject], 'INPUT');
  for (const name of ['lo', ...config.excludedInterfaces, ...config.virtualInterfaces]) add(['-i', name, '-j', 'RETURN']);
  add(['-p', 'tcp', '--dport', String(config.inboundTunnelPort), '-j', 'RETURN']);
  if (inboundPorts === '*') {
    for (const port of config.excludedInboundPorts) add(['-p', 'tcp', '--dport', String(port), '-j', 'RETURN']);
    add(['-p', 'tcp', ...reject]);
  } else {
    for (const port of inboundPorts) add(['-p', 'tcp', '--dport', String(port), ...reject]);
  }
  return rules;
}
