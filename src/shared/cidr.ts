import { BlockList, isIP } from 'node:net';

/** Comma-separated CIDRs (BLOCKED_CIDRS_IN_WASM_FETCH) as one list; a bad one throws, naming it. */
export function parseCidrs(text: string): BlockList {
  const list = new BlockList();
  for (const cidr of text.split(',').map((part) => part.trim()).filter(Boolean)) {
    const [net = '', bits = '', ...rest] = cidr.split('/');
    const family = isIP(net);
    const prefix = Number(bits);
    if (!family || rest.length > 0 || !/^\d+$/.test(bits) || prefix > (family === 4 ? 32 : 128)) throw new Error(`"${cidr}" is not a CIDR (e.g. 10.0.0.0/8)`);
    list.addSubnet(net, prefix, family === 4 ? 'ipv4' : 'ipv6');
  }
  return list;
}
