import type { CaptureConfig } from '../iptables/config.ts';
import { NftChain, NftTable, type NftBuilder } from './plan.ts';

const tcp = 'meta l4proto tcp';

/** Inbound TCP to the inbound capture port: REDIRECT in the nat table, or TPROXY in mangle. No ports: no jump at all, as Istio. */
export function inboundRules(nft: NftBuilder, config: CaptureConfig): void {
  const { inboundPorts } = config;
  if (inboundPorts !== '*' && inboundPorts.length === 0) return;
  if (config.mode === 'TPROXY') return tproxyInbound(nft, config);
  const { nat } = NftTable;
  nft.add(nat, NftChain.prerouting, tcp, 'counter jump', NftChain.inbound);
  if (inboundPorts === '*') {
    for (const port of config.excludedInboundPorts) nft.add(nat, NftChain.inbound, tcp, 'tcp dport', String(port), 'counter return');
    nft.add(nat, NftChain.inbound, tcp, 'counter jump', NftChain.inRedirect);
    return;
  }
  for (const port of inboundPorts) nft.add(nat, NftChain.inbound, tcp, 'tcp dport', String(port), 'counter jump', NftChain.inRedirect);
}

/**
 * TPROXY: new connections are handed to the transparent listener with the
 * mark that routes them to loopback (routes.ts); packets of established
 * ones only get the mark (istio-divert).
 */
function tproxyInbound(nft: NftBuilder, config: CaptureConfig): void {
  const { mangle } = NftTable;
  const mark = String(config.tproxyMark);
  const port = `:${config.inboundCapturePort}`;
  nft.add(mangle, NftChain.divert, 'counter meta mark set', mark);
  nft.add(mangle, NftChain.divert, 'counter accept');
  nft.add(mangle, NftChain.tproxy, tcp, 'ip daddr !=', config.loopbackCidr, 'tproxy ip to', port, 'meta mark set', mark, 'counter accept');
  nft.add6(mangle, NftChain.tproxy, tcp, 'ip6 daddr != ::1/128 tproxy ip6 to', port, 'meta mark set', mark, 'counter accept');
  nft.add(mangle, NftChain.prerouting, tcp, 'counter jump', NftChain.inbound);
  const established = 'ct state related,established';
  if (config.inboundPorts === '*') {
    for (const excluded of config.excludedInboundPorts) nft.add(mangle, NftChain.inbound, tcp, 'tcp dport', String(excluded), 'counter return');
    nft.add(mangle, NftChain.inbound, tcp, established, 'counter jump', NftChain.divert);
    nft.add(mangle, NftChain.inbound, tcp, 'counter jump', NftChain.tproxy);
    return;
  }
  for (const included of config.inboundPorts) {
    nft.add(mangle, NftChain.inbound, tcp, established, 'tcp dport', String(included), 'counter jump', NftChain.divert);
    nft.add(mangle, NftChain.inbound, tcp, 'tcp dport', String(included), 'counter jump', NftChain.tproxy);
  }
}

/** The mark Envoy's outbound calls to the pod's own inbound get under TPROXY, so they are not diverted again. */
const outboundMark = '1338';

/** TPROXY's marks on the way out and the inbound exemptions that keep Envoy's own connections out of the loop. */
export function tproxyTailRules(nft: NftBuilder, config: CaptureConfig): void {
  const { mangle } = NftTable;
  const mark = String(config.tproxyMark);
  nft.add(mangle, NftChain.prerouting, tcp, 'mark', mark, 'counter ct mark set mark');
  nft.add(mangle, NftChain.output, 'oifname lo', tcp, 'mark', mark, 'counter return');
  for (const [match, ids] of [['skuid', config.proxyUids], ['skgid', config.proxyGids]] as const) {
    for (const id of ids) {
      nft.add(mangle, NftChain.output, 'oifname lo', tcp, 'ip daddr !=', config.loopbackCidr, match, id, 'counter meta mark set', outboundMark);
      nft.add6(mangle, NftChain.output, 'oifname lo', tcp, 'ip6 daddr != ::1/128', match, id, 'counter meta mark set', outboundMark);
    }
  }
  nft.add(mangle, NftChain.output, tcp, 'ct mark', mark, 'counter meta mark set ct mark');
  nft.insert(mangle, NftChain.inbound, 0, tcp, 'mark', mark, 'counter return');
  nft.insert(mangle, NftChain.inbound, 1, 'iifname lo', tcp, 'ip saddr 127.0.0.6/32 counter return');
  nft.insert6(mangle, NftChain.inbound, 1, 'iifname lo', tcp, 'ip6 saddr ::6/128 counter return');
  nft.insert(mangle, NftChain.inbound, 2, 'iifname lo', tcp, 'mark !=', outboundMark, 'counter return');
}
