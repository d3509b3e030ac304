import type { NetworkInterfaceInfo } from 'node:os';
import type { Clock } from '../shared/clock.ts';

export type InterfaceTable = NodeJS.Dict<NetworkInterfaceInfo[]>;

/**
 * The first private address of an interface: not loopback, not link-local,
 * with IPv4-mapped IPv6 unwrapped. IPv4 first, as pods usually have one.
 */
export function pickPrivateIp(table: InterfaceTable): string | undefined {
  const candidates = Object.values(table)
    .flatMap((infos) => infos ?? [])
    .filter((info) => !info.internal)
    .map((info) => unwrapMapped(info.address))
    .filter((address) => !isLinkLocal(address) && !isLoopback(address));
  return candidates.find((address) => !address.includes(':')) ?? candidates[0];
}

function unwrapMapped(address: string): string {
  const match = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  return match ? match[1]! : address;
}

function isLinkLocal(address: string): boolean {
  return address.startsWith('169.254.') || /^fe[89ab]/i.test(address);
}

function isLoopback(address: string): boolean {
  return address.startsWith('127.') || address === '::1';
}

export interface WaitForPrivateIpOptions {
  interfaces: () => InterfaceTable;
  clock: Clock;
  /** Istio waits up to two minutes for the pod network to come up. */
  timeoutMs: number;
  intervalMs: number;
}

/** Polls the interfaces until a private IP shows up or the wait runs out. */
export async function waitForPrivateIp(options: WaitForPrivateIpOptions): Promise<string | undefined> {
  const deadline = options.clock.now() + options.timeoutMs;
  for (;;) {
    const found = pickPrivateIp(options.interfaces());
    if (found || options.clock.now() >= deadline) return found;
    await options.clock.sleep(options.intervalMs);
  }
}
