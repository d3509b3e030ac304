import type { CaptureConfig, RunConfig } from '../../iptables/config.ts';
import type { HostFacts } from '../../iptables/plan.ts';
import { badFile } from '../../shared/errors.ts';
import { dnsServers, mixedLine, toolExec, type Surroundings } from './capture-host.ts';

/**
 * `istio-iptables --native-nftables`: the same capture as nftables tables
 * (src/nftables/), written with `nft -f -` in one transaction, then the
 * routes the iptables mode sets too (::6 on loopback, TPROXY's).
 */
export async function captureNft(config: CaptureConfig, run: RunConfig, { ipv6, note, context }: Surroundings): Promise<void> {
  // Loaded on use, as the iptables mode's builder.
  const { buildNftRules } = await import('../../nftables/rules.ts');
  const { dnsPlan } = await import('../../iptables/dns-rules.ts');
  // An inet table sees IPv6 too: a pod with any IPv6 address gets the IPv6 exemptions (::1, ::6) as well.
  const host: HostFacts = { ipv6: ipv6.mode === 'none' ? 'none' : 'capture', ...dnsServers(config) };
  if (ipv6.mode === 'reject' && !run.cleanupOnly) {
    note(
      `the pod has IPv6 address ${ipv6.address} but dual stack is off (ISTIO_DUAL_STACK): nftables' inet tables capture IPv6 as IPv4 ` +
        `all the same, so its IPv6 exemptions (::1, ::6) are written too`,
    );
  }
  const rules = buildNftRules(config, host);
  if (config.redirectDns && !dnsPlan(config, host).enabled)
    note('--redirect-dns is set, but /etc/resolv.conf names no server and --capture-all-dns is off: DNS is not captured');
  const { renderCleanup, renderTransaction } = await import('../../nftables/render.ts');
  if (run.dryRun) return void context.stdout.write(`# nft -f -\n${run.cleanupOnly ? renderCleanup() : renderTransaction(rules)}`);
  const { hasBinary } = await import('../../iptables/apply.ts');
  if (!(await hasBinary('nft', toolExec))) throw badFile('nft', 'not found or does not run; --native-nftables writes the capture with it (install nftables)');
  const { applyNftRules, iptablesResidue, removeNftRules } = await import('../../nftables/apply.ts');
  if (run.cleanupOnly) {
    await removeNftRules(toolExec);
    return note('nftables: tables istio-proxy-nat, istio-proxy-mangle and istio-proxy-raw removed');
  }
  await applyNftRules(rules, toolExec);
  const { configureRoutes } = await import('../../iptables/routes.ts');
  try {
    await configureRoutes(config, host.ipv6 === 'capture', toolExec);
  } catch (error) {
    // Rules whose routes are missing capture into nothing (TPROXY): none stay behind.
    await removeNftRules(toolExec).catch(() => undefined);
    throw error;
  }
  const { nftTables } = await import('../../nftables/plan.ts');
  note(`nftables: ${nftTables.filter((table) => rules.some((rule) => rule.table === table)).join(', ')} written`);
  const residue = await iptablesResidue(toolExec);
  if (residue.length > 0) note(mixedLine(residue, '`istio-iptables --cleanup-only` with --force-iptables-binary naming each'));
}
