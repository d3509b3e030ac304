import type { CaptureConfig } from './config.ts';

/** One `-A <chain> <spec…>` line of the nat table, as tokens. */
export interface Rule {
  chain: string;
  spec: readonly string[];
}

/** The whole capture rule set: pure data, rendered and applied elsewhere. */
export interface RuleSet {
  table: 'nat';
  /** Our chains, created (or flushed) before any rule is appended. */
  chains: readonly string[];
  rules: readonly Rule[];
}

export const Chain = {
  inbound: 'ISTIO_INBOUND',
  inRedirect: 'ISTIO_IN_REDIRECT',
  output: 'ISTIO_OUTPUT',
  redirect: 'ISTIO_REDIRECT',
} as const;

/** Envoy's source address for inbound traffic it passes on to the app. */
const envoyInboundSource = '127.0.0.6/32';
const localhost = '127.0.0.1/32';
const sshPort = 22;

/**
 * Builds Istio's REDIRECT-mode capture: inbound TCP goes through
 * ISTIO_INBOUND to the inbound capture port, outbound TCP through
 * ISTIO_OUTPUT to the outbound capture port, except for the proxy's own
 * traffic (by UID and GID), localhost and the excluded ports and ranges.
 */
export function buildCaptureRules(config: CaptureConfig): RuleSet {
  const rules = [...redirectRules(config), ...inboundRules(config), ...outputRules(config)];
  return { table: 'nat', chains: Object.values(Chain), rules };
}

function rule(chain: string, ...spec: string[]): Rule {
  return { chain, spec };
}

function redirectRules(config: CaptureConfig): Rule[] {
  return [
    rule(Chain.redirect, '-p', 'tcp', '-j', 'REDIRECT', '--to-ports', String(config.outboundCapturePort)),
    rule(Chain.inRedirect, '-p', 'tcp', '-j', 'REDIRECT', '--to-ports', String(config.inboundCapturePort)),
  ];
}

/** No inbound ports: no jump from PREROUTING at all, as in Istio. */
function inboundRules(config: CaptureConfig): Rule[] {
  const { inboundPorts } = config;
  if (inboundPorts !== '*' && inboundPorts.length === 0) return [];
  const jump = rule('PREROUTING', '-p', 'tcp', '-j', Chain.inbound);
  if (inboundPorts !== '*') {
    return [jump, ...inboundPorts.map((port) => portRule(Chain.inbound, port, Chain.inRedirect))];
  }
  // With '*', keep SSH reachable like istio-iptables.sh did, then the exclusions.
  const excluded = [...new Set([sshPort, ...config.excludedInboundPorts])];
  return [
    jump,
    ...excluded.map((port) => portRule(Chain.inbound, port, 'RETURN')),
    rule(Chain.inbound, '-p', 'tcp', '-j', Chain.inRedirect),
  ];
}

function portRule(chain: string, port: number, target: string): Rule {
  return rule(chain, '-p', 'tcp', '--dport', String(port), '-j', target);
}

function outputRules(config: CaptureConfig): Rule[] {
  return [
    rule('OUTPUT', '-p', 'tcp', '-j', Chain.output),
    ...config.excludedOutboundPorts.map((port) => portRule(Chain.output, port, 'RETURN')),
    // Envoy forwarding inbound traffic to the app must not loop back into Envoy.
    rule(Chain.output, '-s', envoyInboundSource, '-o', 'lo', '-j', 'RETURN'),
    ...ownerRules(config, '--uid-owner', config.proxyUid),
    ...ownerRules(config, '--gid-owner', config.proxyGid),
    // Envoy-aware apps and container-to-container calls use localhost on purpose.
    rule(Chain.output, '-d', localhost, '-j', 'RETURN'),
    ...config.excludedOutboundCidrs.map((cidr) => rule(Chain.output, '-d', cidr, '-j', 'RETURN')),
    ...outboundIncludeRules(config.includedOutboundCidrs),
  ];
}

/**
 * The proxy's own traffic is never captured as outbound (that would loop),
 * but when it calls the pod's own IP over loopback it is sent to the inbound
 * port so the call passes the server side too. The app's loopback traffic
 * (other than that) stays uncaptured.
 */
function ownerRules(config: CaptureConfig, match: string, id: number): Rule[] {
  const owner = String(id);
  const inboundOn = config.inboundPorts === '*' || config.inboundPorts.length > 0;
  const selfCall = rule(Chain.output, '!', '-d', localhost, '-o', 'lo', '-m', 'owner', match, owner, '-j', Chain.inRedirect);
  return [
    ...(inboundOn ? [selfCall] : []),
    rule(Chain.output, '-o', 'lo', '-m', 'owner', '!', match, owner, '-j', 'RETURN'),
    rule(Chain.output, '-m', 'owner', match, owner, '-j', 'RETURN'),
  ];
}

function outboundIncludeRules(include: '*' | readonly string[]): Rule[] {
  if (include === '*') return [rule(Chain.output, '-j', Chain.redirect)];
  if (include.length === 0) return [];
  // Only the listed ranges go to Envoy; the rest leaves directly.
  return [...include.map((cidr) => rule(Chain.output, '-d', cidr, '-j', Chain.redirect)), rule(Chain.output, '-j', 'RETURN')];
}
