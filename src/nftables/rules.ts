import type { CaptureConfig } from '../iptables/config.ts';
import { dnsPlan } from '../iptables/dns-rules.ts';
import type { HostFacts } from '../iptables/plan.ts';
import { dnsRules } from './dns.ts';
import { inboundRules, tproxyTailRules } from './inbound.ts';
import { NftBuilder, NftChain, NftTable, type NftRule } from './plan.ts';

const { nat, mangle } = NftTable;
const tcp = 'meta l4proto tcp';

/**
 * Builds Istio's native nftables capture (tools/istio-nftables/pkg/capture),
 * rule for rule and in its order, from the same checked config as the
 * iptables mode: inbound TCP to the inbound capture port, the app's outbound
 * to the outbound port, never the proxy's own, loopback or what the flags
 * exclude; optionally DNS to the agent. `host.ipv6 === 'capture'` adds the
 * rules that name IPv6 addresses.
 */
export function buildNftRules(config: CaptureConfig, host: HostFacts): NftRule[] {
  const nft = new NftBuilder(host.ipv6 === 'capture');
  entryRules(nft, config);
  inboundRules(nft, config);
  outputRules(nft, config, host);
  if (config.mode === 'TPROXY') tproxyTailRules(nft, config);
  return nft.rules;
}

/** What comes before inbound: skipped interfaces, invalid packets, the tunnel port and the two redirect chains. */
function entryRules(nft: NftBuilder, config: CaptureConfig): void {
  const tables = config.mode === 'TPROXY' ? [nat, mangle] : [nat];
  for (const table of tables) {
    for (const name of config.excludedInterfaces) {
      nft.add(table, NftChain.prerouting, `iifname ${quoted(name)} counter return`);
      nft.add(table, NftChain.output, `oifname ${quoted(name)} counter return`);
    }
  }
  for (const name of config.virtualInterfaces) nft.insert(nat, NftChain.prerouting, 0, `iifname ${quoted(name)} counter return`);
  if (config.dropInvalid) {
    nft.add(mangle, NftChain.prerouting, tcp, 'ct state invalid counter jump', NftChain.drop);
    nft.add(mangle, NftChain.drop, 'counter drop');
  }
  // Envoy's tunnel (HBONE) listener authenticates its peers itself.
  nft.add(nat, NftChain.inbound, tcp, 'tcp dport', String(config.inboundTunnelPort), 'counter return');
  nft.add(nat, NftChain.redirect, tcp, `counter redirect to :${config.outboundCapturePort}`);
  nft.add(nat, NftChain.inRedirect, tcp, `counter redirect to :${config.inboundCapturePort}`);
}

/** istio-output: what the app sends, less the proxy's own traffic, loopback and the exclusions. */
function outputRules(nft: NftBuilder, config: CaptureConfig, host: HostFacts): void {
  const out = NftChain.istioOutput;
  nft.add(nat, NftChain.output, 'counter jump', out);
  for (const port of config.excludedOutboundPorts) {
    nft.add(nat, out, `tcp dport ${port} counter return`);
    nft.add(nat, out, `udp dport ${port} counter return`);
  }
  // Envoy passing inbound traffic on to the app must not loop back into Envoy.
  nft.add(nat, out, 'oifname lo ip saddr 127.0.0.6/32 counter return');
  nft.add6(nat, out, 'oifname lo ip6 saddr ::6/128 counter return');
  const dns = dnsPlan(config, host).enabled;
  for (const uid of config.proxyUids) ownerRules(nft, config, { match: 'skuid', id: uid, dns });
  for (const gid of config.proxyGids) ownerRules(nft, config, { match: 'skgid', id: gid, dns });
  ownerGroupRules(nft, config);
  if (dns) dnsRules(nft, config, host);
  // Envoy-aware apps and container-to-container calls use localhost on purpose.
  nft.add(nat, out, `ip daddr ${config.loopbackCidr} counter return`);
  nft.add6(nat, out, 'ip6 daddr ::1/128 counter return');
  for (const cidr of config.excludedOutboundCidrs.v4) nft.add(nat, out, `ip daddr ${cidr} counter return`);
  for (const cidr of config.excludedOutboundCidrs.v6) nft.add6(nat, out, `ip6 daddr ${cidr} counter return`);
  for (const port of config.includedOutboundPorts) nft.add(nat, out, `tcp dport ${port} counter jump`, NftChain.redirect);
  outboundIncludeRules(nft, config);
}

interface Owner {
  match: 'skuid' | 'skgid';
  id: string;
  dns: boolean;
}

/**
 * The proxy's own traffic is never captured as outbound (that would loop),
 * but its calls to the pod's own IP over loopback go to the inbound port so
 * they pass the server side too; never the tunnel port, and (UID rules, with
 * DNS capture) never port 53. The app's loopback traffic stays uncaptured
 * unless -i lists loopback.
 */
function ownerRules(nft: NftBuilder, config: CaptureConfig, { match, id, dns }: Owner): void {
  const out = NftChain.istioOutput;
  const tunnel = String(config.inboundTunnelPort);
  const skip = dns && match === 'skuid' ? `tcp dport != { 53, ${tunnel} }` : `tcp dport != ${tunnel}`;
  nft.add(nat, out, 'oifname lo', tcp, `ip daddr != ${config.loopbackCidr}`, skip, match, id, 'counter jump', NftChain.inRedirect);
  nft.add6(nat, out, 'oifname lo', tcp, 'ip6 daddr != ::1/128', skip, match, id, 'counter jump', NftChain.inRedirect);
  if (!loopbackIncluded(config)) {
    const lo = dns ? `oifname lo ${tcp} tcp dport != 53` : 'oifname lo';
    nft.add(nat, out, lo, match, '!=', id, 'counter return');
  }
  // Protocol-independent: none of the proxy's own packets is captured.
  nft.add(nat, out, match, id, 'counter return');
}

function loopbackIncluded(config: CaptureConfig): boolean {
  const include = config.includedOutboundCidrs;
  return include !== '*' && [...include.v4, ...include.v6].some((cidr) => cidr.startsWith('127.') || cidr === '::1/128');
}

function ownerGroupRules(nft: NftBuilder, config: CaptureConfig): void {
  const { except, values } = config.ownerGroups;
  if (except) {
    for (const group of values) nft.add(nat, NftChain.istioOutput, `skgid ${quoted(group)} counter return`);
    return;
  }
  nft.add(nat, NftChain.istioOutput, ...values.map((group) => `skgid != ${quoted(group)}`), 'counter return');
}

/** '*' sends the rest to Envoy; lists send only those ranges. -k interfaces' inbound counts as outbound. */
function outboundIncludeRules(nft: NftBuilder, config: CaptureConfig): void {
  const include = config.includedOutboundCidrs;
  if (include === '*') {
    nft.add(nat, NftChain.istioOutput, 'counter jump', NftChain.redirect);
    for (const name of config.virtualInterfaces) nft.insert(nat, NftChain.prerouting, 0, `iifname ${quoted(name)} counter jump`, NftChain.redirect);
    return;
  }
  for (const [family, cidrs] of [['ip', include.v4], ['ip6', include.v6]] as const) {
    const add = family === 'ip' ? nft.add.bind(nft) : nft.add6.bind(nft);
    const insert = family === 'ip' ? nft.insert.bind(nft) : nft.insert6.bind(nft);
    for (const cidr of cidrs) {
      const to = `${family} daddr ${cidr} counter jump ${NftChain.redirect}`;
      for (const name of config.virtualInterfaces) insert(nat, NftChain.prerouting, 0, `iifname ${quoted(name)}`, to);
      add(nat, NftChain.istioOutput, to);
    }
  }
}

/** Names from the flags go in quotes: nft reads a bare word starting with a digit, or holding `@`, as something else. */
function quoted(name: string): string {
  return /^\d+$/.test(name) ? name : `"${name}"`;
}
