import { badFlag } from '../shared/errors.ts';
import {
  parseCidrSelection,
  parseOwnerId,
  parsePort,
  parsePortList,
  parsePortSelection,
  type PortSelection,
} from './ports.ts';

/** The flags of `istio-iptables` as typed on the command line. */
export interface CaptureFlags {
  envoyPort: string;
  inboundCapturePort: string;
  proxyUid: string;
  proxyGid?: string | undefined;
  mode: string;
  inboundPorts: string;
  excludeInboundPorts: string;
  includeOutboundCidrs: string;
  excludeOutboundCidrs: string;
  excludeOutboundPorts: string;
}

/** What the rule builder needs, every value checked. */
export interface CaptureConfig {
  outboundCapturePort: number;
  inboundCapturePort: number;
  proxyUid: number;
  proxyGid: number;
  inboundPorts: PortSelection;
  excludedInboundPorts: readonly number[];
  includedOutboundCidrs: '*' | readonly string[];
  excludedOutboundCidrs: readonly string[];
  excludedOutboundPorts: readonly number[];
}

/** Checks the flags; throws a usage error naming the flag at fault. */
export function resolveCaptureConfig(flags: CaptureFlags): CaptureConfig {
  if (flags.mode !== 'REDIRECT') {
    throw badFlag('-m', `interception mode "${flags.mode}" is not supported (only REDIRECT)`);
  }
  const proxyUid = parseOwnerId('-u', flags.proxyUid);
  const config: CaptureConfig = {
    outboundCapturePort: parsePort('-p', flags.envoyPort),
    inboundCapturePort: parsePort('-z', flags.inboundCapturePort),
    proxyUid,
    // Like Istio: the group defaults to the user's id.
    proxyGid: flags.proxyGid === undefined ? proxyUid : parseOwnerId('-g', flags.proxyGid),
    inboundPorts: parsePortSelection('-b', flags.inboundPorts),
    excludedInboundPorts: parsePortList('-d', flags.excludeInboundPorts),
    includedOutboundCidrs: parseCidrSelection('-i', flags.includeOutboundCidrs),
    excludedOutboundCidrs: excludedCidrs(flags.excludeOutboundCidrs),
    excludedOutboundPorts: parsePortList('-o', flags.excludeOutboundPorts),
  };
  checkInboundConflicts(config.inboundPorts, config.excludedInboundPorts);
  return config;
}

function excludedCidrs(text: string): string[] {
  const cidrs = parseCidrSelection('-x', text);
  if (cidrs === '*') throw badFlag('-x', `"*" would exclude everything; leave -i empty instead`);
  return cidrs;
}

/**
 * A port both captured and excluded is a contradiction, not a precedence
 * question. `names` says where the two lists came from, for the error line.
 */
export function checkInboundConflicts(
  include: PortSelection,
  exclude: readonly number[],
  names = { include: '-b', exclude: '-d' },
): void {
  if (include === '*') return;
  const clash = include.find((port) => exclude.includes(port));
  if (clash !== undefined) {
    throw badFlag(names.exclude, `port ${clash} is also in the captured inbound ports (${names.include})`);
  }
}
