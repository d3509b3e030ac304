import type { NetworkInterfaceInfo } from 'node:os';
import type { Clock } from '../shared/clock.ts';

export type InterfaceTable = NodeJS.Dict<NetworkInterfaceInfo[]>;

/**
 * The first private address of an interface: not loopback, not link-local,
 * with IPv4-mapped IPv6 unwrapped. IPv4 first, as pods usually have one.
 */
export function pickPrivateIp(table: InterfaceTable): string | undefined {
  return listPrivateIps(table)[0];
}

/** Every private address of the host, IPv4 first, without duplicates. */
export function listPrivateIps(table: InterfaceTable): string[] {
  const candidates = Object.values(table)
    .flatMap((infos) => infos ?? [])
    .filter((info) => !info.internal)
    .map((info) => unwrapMapped(info.address))
    .filter((address) => !isLinkLocal(address) && !isLoopback(address));
  const v4 = candidates.filter((address) => !address.includes(':'));
  return [...new Set([...v4, ...candidates.filter((address) => address.includes(':'))])];
}

/**
 * INSTANCE_IPS as Istio's agent sends it: the proxy's own IP first (istiod
 * takes the first as the pod IP), then the host's private addresses but
 * those of the excluded interfaces, or both loopbacks when there are none.
 */
export function instanceIps(roleIp: string, table: InterfaceTable, excludeInterfaces: readonly string[] = []): string[] {
  const others = listPrivateIps(table);
  // As Istio: the loopbacks stand in only for a host without private addresses, before any exclusion.
  if (others.length === 0) return [...new Set([roleIp, '127.0.0.1', '::1'])];
  const excluded = new Set(listPrivateIps(Object.fromEntries(excludeInterfaces.map((name) => [name, table[name]]))));
  return [...new Set([roleIp, ...others.filter((address) => !excluded.has(address))])];
}

/** The traffic.sidecar.istio.io/excludeInterfaces annotation: interfaces whose addresses are not the proxy's (Istio's getExcludeInterfaces). */
export const excludeInterfacesAnnotation = 'traffic.sidecar.istio.io/excludeInterfaces';

export function excludedInterfaces(annotations: Readonly<Record<string, string>> | undefined): string[] {
  return (annotations?.[excludeInterfacesAnnotation] ?? '').split(',').filter((name) => name !== '');
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
