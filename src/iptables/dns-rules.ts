import type { CaptureConfig } from './config.ts';
import { Chain, type HostFacts, type PlanBuilder } from './plan.ts';

/** The agent's DNS proxy port (Istio's IstioAgentDNSListenerPort). */
export const dnsProxyPort = '15053';

/** Whether DNS capture is on: Istio turns it off when there is no server to capture. */
export function dnsPlan(config: CaptureConfig, host: HostFacts): { enabled: boolean; captureAll: boolean } {
  const servers = host.dnsServersV4.length + host.dnsServersV6.length;
  return { enabled: config.redirectDns && (config.captureAllDns || servers > 0), captureAll: config.captureAllDns };
}


/**
 * The app's DNS (UDP and TCP 53) goes to the agent on 15053: to every server
 * with --capture-all-dns, else to those of /etc/resolv.conf. The proxy's own
 * queries were returned above by UID/GID, so its upstream lookups never loop.
 * In raw, conntrack zones keep the two legs of a UDP exchange apart.
 */
export function dnsRules(plan: PlanBuilder, config: CaptureConfig, host: HostFacts, captureAll: boolean): void {
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
    for (const server of host.dnsServersV4)
      plan.add('v4', 'nat', Chain.outputDns, ['-p', protocol, '--dport', '53', '-d', `${server}/${v4Bits}`, '-j', 'REDIRECT', to, dnsProxyPort]);
    for (const server of host.dnsServersV6)
      plan.add('v6', 'nat', Chain.outputDns, ['-p', protocol, '--dport', '53', '-d', `${server}/${v6Bits}`, '-j', 'REDIRECT', to, dnsProxyPort]);
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

