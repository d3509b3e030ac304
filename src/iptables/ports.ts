import { isIPv4 } from 'node:net';
import { badFlag } from '../shared/errors.ts';

/** Inbound ports to capture: every port, or a list. */
export type PortSelection = '*' | readonly number[];

/** One TCP port, 1–65535; `flag` names the source in the error line. */
export function parsePort(flag: string, text: string): number {
  const trimmed = text.trim();
  const port = /^\d+$/.test(trimmed) ? Number(trimmed) : Number.NaN;
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw badFlag(flag, `port "${text}" is not an integer from 1 to 65535`);
  }
  return port;
}

/** A comma-separated port list; '' is no ports. Duplicates are dropped. */
export function parsePortList(flag: string, text: string): number[] {
  const items = text.split(',').filter((item) => item.trim() !== '');
  return [...new Set(items.map((item) => parsePort(flag, item)))];
}

/** Like parsePortList, but '*' selects every port. */
export function parsePortSelection(flag: string, text: string): PortSelection {
  return text.trim() === '*' ? '*' : parsePortList(flag, text);
}

/** A user or group id: the `-m owner` match takes 0 … 2^32-2. */
export function parseOwnerId(flag: string, text: string): number {
  const id = /^\d+$/.test(text.trim()) ? Number(text.trim()) : Number.NaN;
  if (!Number.isSafeInteger(id) || id > 0xfffffffe) throw badFlag(flag, `"${text}" is not a numeric id`);
  return id;
}

/**
 * A comma-separated list of IPv4 CIDRs ('*' for everything). A bare address
 * is a /32. IPv6 is refused rather than ignored: we only write IPv4 rules, and
 * silently leaving IPv6 traffic uncaptured would be a surprise.
 */
export function parseCidrSelection(flag: string, text: string): '*' | string[] {
  if (text.trim() === '*') return '*';
  const items = text.split(',').map((item) => item.trim()).filter((item) => item !== '');
  return [...new Set(items.map((item) => parseCidr(flag, item)))];
}

function parseCidr(flag: string, text: string): string {
  const [address = '', prefix = '32', ...rest] = text.split('/');
  const bits = /^\d+$/.test(prefix) ? Number(prefix) : -1;
  if (!isIPv4(address) || rest.length > 0 || bits < 0 || bits > 32) {
    throw badFlag(flag, `"${text}" is not an IPv4 address or CIDR (IPv6 is not supported)`);
  }
  return `${address}/${bits}`;
}
