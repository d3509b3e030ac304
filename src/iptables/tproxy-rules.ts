import type { CaptureConfig } from './config.ts';
import { Chain, type PlanBuilder } from './plan.ts';

/** The mark Envoy's outbound traffic to its own inbound gets under TPROXY. */
const outboundMark = '1338';

/** TPROXY's marks: Envoy's own connections to the app are neither diverted nor looped. */
export function tproxyTailRules(plan: PlanBuilder, config: CaptureConfig): void {
  const mark = String(config.tproxyMark);
  plan.add('both', 'mangle', 'PREROUTING', ['-p', 'tcp', '-m', 'mark', '--mark', mark, '-j', 'CONNMARK', '--save-mark']);
  plan.add('both', 'mangle', 'OUTPUT', ['-p', 'tcp', '-o', 'lo', '-m', 'mark', '--mark', mark, '-j', 'RETURN']);
  for (const [match, ids] of [['--uid-owner', config.proxyUids], ['--gid-owner', config.proxyGids]] as const) {
    for (const id of ids) {
      plan.versioned('mangle', 'OUTPUT', (family) => [
        '!',
        '-d',
        family.loopback,
        '-p',
        'tcp',
        '-o',
        'lo',
        '-m',
        'owner',
        match,
        id,
        '-j',
        'MARK',
        '--set-mark',
        outboundMark,
      ]);
    }
  }
  plan.add('both', 'mangle', 'OUTPUT', ['-p', 'tcp', '-m', 'connmark', '--mark', mark, '-j', 'CONNMARK', '--restore-mark']);
  plan.add('both', 'mangle', Chain.inbound, ['-p', 'tcp', '-m', 'mark', '--mark', mark, '-j', 'RETURN'], 1);
  plan.add('v4', 'mangle', Chain.inbound, ['-p', 'tcp', '-s', '127.0.0.6/32', '-i', 'lo', '-j', 'RETURN'], 2);
  plan.add('v6', 'mangle', Chain.inbound, ['-p', 'tcp', '-s', '::6/128', '-i', 'lo', '-j', 'RETURN'], 2);
  plan.add('both', 'mangle', Chain.inbound, ['-p', 'tcp', '-i', 'lo', '-m', 'mark', '!', '--mark', outboundMark, '-j', 'RETURN'], 3);
}

