import { readFileSync } from 'node:fs';
import type { CaptureConfig } from '../../iptables/config.ts';
import { parseResolvConf, type Ipv6Decision } from '../../iptables/host.ts';
import type { HostFacts } from '../../iptables/plan.ts';
import { badFile, describe } from '../../shared/errors.ts';
import type { CommandContext } from '../context.ts';

/** What a capture mode is handed besides its config: the pod's IPv6, where notes go, the command's streams. */
export interface Surroundings {
  ipv6: Ipv6Decision;
  note: (line: string) => void;
  context: CommandContext;
}

/** Runs a tool through execa; rejects with execa's error, which carries the tool's stderr. */
export async function toolExec(file: string, args: readonly string[], input?: string): Promise<{ stdout: string }> {
  const { execa } = await import('execa');
  const result = await execa(file, args, { input, timeout: 60_000, forceKillAfterDelay: 5000, maxBuffer: 16 * 1024 * 1024 });
  return { stdout: result.stdout };
}

/** Istio reads the name servers only for DNS capture without --capture-all-dns. */
export function dnsServers(config: CaptureConfig): Pick<HostFacts, 'dnsServersV4' | 'dnsServersV6'> {
  if (!config.redirectDns || config.captureAllDns) return { dnsServersV4: [], dnsServersV6: [] };
  const path = '/etc/resolv.conf';
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw badFile(path, `cannot be read for --redirect-dns: ${describe(error)}`, error);
  }
  const { v4, v6 } = parseResolvConf(text);
  return { dnsServersV4: v4, dnsServersV6: v6 };
}

/**
 * A pod's network namespace with both kinds of capture (a mode switched
 * between runs): every rule set sees every packet, and the NAT hooks ask
 * each in turn until one redirects a new connection, so a connection either
 * set captures is captured. Said in one line; Istio says nothing.
 */
export function mixedLine(others: readonly string[], removal: string): string {
  return (
    `capture rules of another mode are also in this network namespace (${others.join(', ')}): both see every packet, so a connection ` +
    `either captures is captured and an exclusion holds only where both exclude it; ${removal} removes them`
  );
}
