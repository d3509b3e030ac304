import type { CaptureConfig } from './config.ts';
import { Chain, type Rule } from './plan.ts';

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

