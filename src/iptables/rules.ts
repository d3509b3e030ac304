import type { CaptureConfig } from './config.ts';
import { dnsPlan, dnsRules } from './dns-rules.ts';
import { ipv6RejectRules } from './ipv6-reject.ts';
import { Chain, PlanBuilder, type CapturePlan, type Family, type HostFacts, type Table } from './plan.ts';
import type { CidrLists } from './ports.ts';
import { tproxyTailRules } from './tproxy-rules.ts';

export { Chain, type CapturePlan, type HostFacts, type Ipv6Mode, type Rule, type Table } from './plan.ts';
export { dnsPlan } from './dns-rules.ts';

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
  entryRules(plan, config);
  inboundRules(plan, config);
  outputRules(plan, config, host, dns);
  if (config.mode === 'TPROXY') tproxyTailRules(plan, config);
  const v6 = host.ipv6 === 'reject' ? ipv6RejectRules(config) : plan.v6;
  return { v4: plan.v4, v6 };
}

/** What comes before the inbound rules: skipped interfaces, invalid packets, the tunnel port and the two redirect chains. */
function entryRules(plan: PlanBuilder, config: CaptureConfig): void {
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
}

/** ISTIO_OUTPUT: what the app sends, less the proxy's own traffic, loopback and the exclusions. */
function outputRules(plan: PlanBuilder, config: CaptureConfig, host: HostFacts, dns: ReturnType<typeof dnsPlan>): void {
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
}

function isLoopback(cidr: string): boolean {
  return cidr.startsWith('127.') || cidr === '::1/128';
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
  if (tproxy) tproxyDivert(plan, config);
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

/** Marked packets are routed to loopback (see routes.ts), where TPROXY hands them to Envoy. */
function tproxyDivert(plan: PlanBuilder, config: CaptureConfig): void {
  plan.add('both', 'mangle', Chain.divert, ['-j', 'MARK', '--set-mark', String(config.tproxyMark)]);
  plan.add('both', 'mangle', Chain.divert, ['-j', 'ACCEPT']);
  const onPort = ['--tproxy-mark', `${config.tproxyMark}/0xffffffff`, '--on-port', String(config.inboundCapturePort)];
  plan.versioned('mangle', Chain.tproxy, (family) => ['!', '-d', family.loopback, '-p', 'tcp', '-j', 'TPROXY', ...onPort]);
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
  plan.versioned('nat', Chain.output, (family) => [
    '-o',
    'lo',
    '!',
    '-d',
    family.loopback,
    '-p',
    'tcp',
    ...skipPorts,
    '-m',
    'owner',
    match,
    id,
    '-j',
    Chain.inRedirect,
  ]);
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

