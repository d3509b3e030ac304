import { isIPv4, isIPv6 } from 'node:net';
import { badFlag } from '../shared/errors.ts';
import { splitList } from '../shared/list.ts';

/** Inbound ports to capture: every port, or a list. */
export type PortSelection = '*' | readonly number[];

/** CIDRs split by family, as Istio splits them (SeparateV4V6). */
export interface CidrLists {
  v4: readonly string[];
  v6: readonly string[];
}

/** Outbound ranges to capture: everything, or lists. */
export type CidrSelection = '*' | CidrLists;

/** One TCP port, 1–65535; `name` names the source in the error line. */
export function parsePort(name: string, text: string): number {
  const trimmed = text.trim();
  const port = /^\d+$/.test(trimmed) ? Number(trimmed) : Number.NaN;
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw badFlag(name, `port "${text}" is not an integer from 1 to 65535`);
  }
  return port;
}

/** A comma-separated port list; '' is no ports. Duplicates are dropped. */
export function parsePortList(name: string, text: string): number[] {
  return [...new Set(splitList(text).map((item) => parsePort(name, item)))];
}

/** Like parsePortList, but '*' selects every port. */
export function parsePortSelection(name: string, text: string): PortSelection {
  return text.trim() === '*' ? '*' : parsePortList(name, text);
}

/** A user or group id: the `-m owner` match takes 0 … 2^32-2. */
export function parseOwnerId(name: string, text: string): string {
  const id = /^\d+$/.test(text.trim()) ? Number(text.trim()) : Number.NaN;
  if (!Number.isSafeInteger(id) || id > 0xfffffffe) throw badFlag(name, `"${text}" is not a numeric id`);
  return String(id);
}

/** A comma-separated list of numeric ids (Istio takes several). */
export function parseOwnerIds(name: string, text: string): string[] {
  const ids = [...new Set(splitList(text).map((item) => parseOwnerId(name, item)))];
  if (ids.length === 0) throw badFlag(name, 'no id given');
  return ids;
}

/** A group by name or number, for `--gid-owner`. */
export function parseGroupList(name: string, text: string): string[] {
  const groups = splitList(text);
  const bad = groups.find((group) => !/^[A-Za-z0-9._-]{1,32}$/.test(group));
  if (bad !== undefined) throw badFlag(name, `"${bad}" is not a group name or id`);
  return [...new Set(groups)];
}

/** Interface names as the kernel allows them (IFNAMSIZ-1, no slash, blank or colon). */
export function parseInterfaces(name: string, text: string): string[] {
  const names = splitList(text);
  const bad = names.find((item) => !/^[A-Za-z0-9._@+-]{1,15}$/.test(item));
  if (bad !== undefined) throw badFlag(name, `"${bad}" is not an interface name`);
  return [...new Set(names)];
}

/** A comma-separated list of IPv4 and IPv6 CIDRs ('*' for everything); a bare address is a host range. */
export function parseCidrSelection(name: string, text: string): CidrSelection {
  if (text.trim() === '*') return '*';
  // Sets keep the first-seen order and drop duplicates in linear time (an annotation can hold thousands).
  const v4 = new Set<string>();
  const v6 = new Set<string>();
  for (const item of splitList(text)) {
    const cidr = parseCidr(name, item);
    (cidr.includes(':') ? v6 : v4).add(cidr);
  }
  return { v4: [...v4], v6: [...v6] };
}

export function parseCidr(name: string, text: string): string {
  const [address = '', prefix, ...rest] = text.split('/');
  const family = isIPv4(address) ? 4 : isIPv6(address) ? 6 : 0;
  const max = family === 4 ? 32 : 128;
  const bits = prefix === undefined ? max : /^\d+$/.test(prefix) ? Number(prefix) : -1;
  if (family === 0 || rest.length > 0 || bits < 0 || bits > max) {
    throw badFlag(name, `"${text}" is not an IPv4 or IPv6 address or CIDR`);
  }
  return `${address}/${bits}`;
}

/** Whether a CIDR lies in loopback (127/8 or ::1), which changes the loopback rules. */
export function isLoopbackCidr(cidr: string): boolean {
  const address = cidr.split('/')[0]!;
  return address.includes(':') ? address === '::1' || /^0+(:0+){6}:0*1$/.test(address) : address.startsWith('127.');
}
