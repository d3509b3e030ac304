import type { CaptureConfig } from '../iptables/config.ts';
import { dnsProxyPort } from '../iptables/dns-rules.ts';
import type { HostFacts } from '../iptables/plan.ts';
import { NftChain, NftTable, type NftBuilder } from './plan.ts';

/**
 * The app's DNS (TCP and UDP 53) to the agent on 15053: to every server with
 * --capture-all-dns, else to those of /etc/resolv.conf. The proxy's own
 * queries were returned earlier by UID/GID, so its upstream lookups never loop.
 */
export function dnsRules(nft: NftBuilder, config: CaptureConfig, host: HostFacts): void {
  const { nat, raw } = NftTable;
  const all = config.captureAllDns;
  const to = `counter redirect to :${dnsProxyPort}`;
  nft.add(raw, NftChain.output, 'counter jump', NftChain.outputDns);
  nft.add(nat, NftChain.istioOutput, 'counter jump', NftChain.outputDns);
  for (const protocol of ['tcp', 'udp'] as const) {
    if (all) {
      // Istio names the protocol for TCP only; the listed rule is the same either way.
      nft.add(nat, NftChain.outputDns, protocol === 'tcp' ? 'meta l4proto tcp tcp dport 53' : 'udp dport 53', to);
      continue;
    }
    for (const server of host.dnsServersV4) nft.add(nat, NftChain.outputDns, `ip daddr ${server}/32 ${protocol} dport 53`, to);
    for (const server of host.dnsServersV6) nft.add6(nat, NftChain.outputDns, `ip6 daddr ${server}/128 ${protocol} dport 53`, to);
  }
  conntrackZones(nft, config, host);
}

/**
 * In raw, conntrack zones keep the two legs of a UDP exchange apart: the
 * agent's upstream queries and their answers in zone 1, the app's queries
 * to the agent and its answers in zone 2.
 */
function conntrackZones(nft: NftBuilder, config: CaptureConfig, host: HostFacts): void {
  const { raw } = NftTable;
  for (const [match, ids] of [['skuid', config.proxyUids], ['skgid', config.proxyGids]] as const) {
    for (const id of ids) {
      nft.add(raw, NftChain.outputDns, `udp dport 53 meta ${match} ${id} counter ct zone set 1`);
      nft.add(raw, NftChain.outputDns, `udp sport ${dnsProxyPort} meta ${match} ${id} counter ct zone set 2`);
    }
  }
  if (config.captureAllDns) {
    nft.add(raw, NftChain.prerouting, 'counter jump', NftChain.inbound);
    nft.add(raw, NftChain.outputDns, 'udp dport 53 counter ct zone set 2');
    nft.add(raw, NftChain.inbound, 'udp sport 53 counter ct zone set 1');
    return;
  }
  // Here DNS capture is on, so resolv.conf named a server (dnsPlan): Istio's check for one always holds.
  nft.add(raw, NftChain.prerouting, 'counter jump', NftChain.inbound);
  for (const server of host.dnsServersV4) {
    nft.add(raw, NftChain.outputDns, `udp dport 53 ip daddr ${server}/32 counter ct zone set 2`);
    nft.add(raw, NftChain.inbound, `udp sport 53 ip saddr ${server}/32 counter ct zone set 1`);
  }
  for (const server of host.dnsServersV6) {
    nft.add6(raw, NftChain.outputDns, `udp dport 53 ip6 daddr ${server}/128 counter ct zone set 2`);
    nft.add6(raw, NftChain.inbound, `udp sport 53 ip6 saddr ${server}/128 counter ct zone set 1`);
  }
}
