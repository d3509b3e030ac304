import type { CaptureConfig } from './config.ts';
import type { Exec } from './apply.ts';
import { firstLine } from './apply.ts';

/** `ip` says "File exists" (a route) or "address already assigned" (an address) on a rerun: that is success. */
async function ipCommand(exec: Exec, args: string[]): Promise<void> {
  try {
    await exec('ip', args);
  } catch (error) {
    if (/file exists|already assigned/i.test(firstLine(error))) return;
    throw new Error(`ip ${args.join(' ')} failed: ${firstLine(error)}`, { cause: error });
  }
}

/**
 * What the rules need of the routing, as Istio's ConfigureRoutes: with IPv6
 * capture, ::6 on loopback (Envoy's source towards the app, which the rules
 * let pass; IPv6 loopback is a /128, unlike 127/8); with TPROXY, marked
 * packets routed to loopback, where the TPROXY target hands them to Envoy.
 */
export async function configureRoutes(config: CaptureConfig, ipv6: boolean, exec: Exec): Promise<void> {
  if (ipv6) await ipCommand(exec, ['-6', 'addr', 'add', '::6/128', 'dev', 'lo']);
  const inbound = config.inboundPorts === '*' || config.inboundPorts.length > 0;
  if (config.mode !== 'TPROXY' || !inbound) return;
  const families = ipv6 ? (['-4', '-6'] as const) : (['-4'] as const);
  const table = String(config.tproxyRouteTable);
  for (const family of families) {
    await replaceRule(exec, family, String(config.tproxyMark), table);
    await ipCommand(exec, [family, 'route', 'add', 'local', family === '-4' ? '0.0.0.0/0' : '::/0', 'dev', 'lo', 'table', table]);
  }
}

/** More copies of our rule than any run of reruns leaves; an `ip` that keeps saying it deleted one is broken. */
export const maxStaleRules = 100;

/** `ip rule add` stacks duplicates; a rerun removes its own first (until `ip` says none is left). */
export async function replaceRule(exec: Exec, family: '-4' | '-6', mark: string, table: string): Promise<void> {
  const rule = ['fwmark', mark, 'lookup', table];
  let deleted = 0;
  try {
    // Bounded: an `ip` (or a wrapper of it) that succeeds on every call would keep the capture step looping forever.
    for (; deleted <= maxStaleRules; deleted++) await exec('ip', [family, 'rule', 'del', ...rule]);
  } catch (error) {
    // "No such file or directory" is how ip says none is left; anything else (no permission, no ip) is a failure.
    if (!/no such file or directory/i.test(firstLine(error)))
      throw new Error(`ip ${family} rule del ${rule.join(' ')} failed: ${firstLine(error)}`, { cause: error });
  }
  if (deleted > maxStaleRules)
    throw new Error(`ip ${family} rule del ${rule.join(' ')} still succeeding after ${maxStaleRules + 1} deletions: not a stale copy left by a rerun`);
  await ipCommand(exec, [family, 'rule', 'add', ...rule]);
}
