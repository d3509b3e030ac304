/**
 * A pod of one IP shape: a network namespace joined to the root namespace
 * by a veth pair that carries IPv6 only (2001:2::/48), IPv4 only, or both,
 * as a Kubernetes pod on an IPv6-only or dual-stack cluster. The root end
 * plays the node: the kubelet's probes and the discovery server sit there.
 * IPv6 addresses are added without duplicate address detection, so they
 * are usable at once rather than after the kernel's tentative period.
 */
import { execa } from 'execa';

export interface FamilyLink {
  /** The root namespace's end (the node). */
  host: string;
  /** The pod's address. */
  pod: string;
}

export interface FamilyNetns {
  name: string;
  v4?: FamilyLink;
  v6?: FamilyLink;
  /** A second network's interface and its IPv4 address (Multus-style), when asked for. */
  second?: { name: string; address: string };
  /** `ip netns exec <name>`, for startAgent's wrap. */
  exec: string[];
  remove(): Promise<void>;
}

const ip = (...args: string[]) => execa('ip', args, { timeout: 10_000 });

let made = 0;

/** Addresses from pid and serial: a /30 in 198.19.128.0/18, a /64 in 2001:2:0:1000::/52 and a /32 in 198.19.192.0/18, apart from the other supports' blocks. */
function links(pid: number, serial: number): { v4: FamilyLink; v6: FamilyLink; second: string } {
  const slot = (pid * 8 + serial) % 4_096;
  const block = slot * 4;
  const at = (offset: number) => `198.19.${128 + ((block + offset) >> 8)}.${(block + offset) & 255}`;
  const net = `2001:2:0:${(0x1000 + slot).toString(16)}`;
  const second = `198.19.${192 + (slot >> 6)}.${(slot & 63) + 1}`;
  return { v4: { host: at(1), pod: at(2) }, v6: { host: `${net}::1`, pod: `${net}::2` }, second };
}

/** Makes the pod's namespace with the families asked for; on any failure nothing is left behind. */
export async function makeFamilyNetns(label: string, families: { v4: boolean; v6: boolean; secondNetwork?: boolean }): Promise<FamilyNetns> {
  const pid = process.pid;
  const serial = made++;
  const name = `pa-${label}-${pid}-${serial}`;
  const outside = `paf${pid}x${serial}`.slice(0, 15);
  const inside = `pag${pid}x${serial}`.slice(0, 15);
  const addresses = links(pid, serial);
  const remove = async () => void (await execa('ip', ['netns', 'del', name], { reject: false, timeout: 10_000 }));
  try {
    await ip('netns', 'add', name);
    await ip('link', 'add', outside, 'type', 'veth', 'peer', 'name', inside, 'netns', name);
    if (families.v4) {
      await ip('addr', 'add', `${addresses.v4.host}/30`, 'dev', outside);
      await ip('-n', name, 'addr', 'add', `${addresses.v4.pod}/30`, 'dev', inside);
    }
    if (families.v6) {
      await ip('-6', 'addr', 'add', `${addresses.v6.host}/64`, 'dev', outside, 'nodad');
      await ip('-n', name, '-6', 'addr', 'add', `${addresses.v6.pod}/64`, 'dev', inside, 'nodad');
    }
    await ip('link', 'set', outside, 'up');
    await ip('-n', name, 'link', 'set', inside, 'up');
    await ip('-n', name, 'link', 'set', 'lo', 'up');
    if (families.secondNetwork) {
      // A veth whose root end has no address (the kernel here may have no dummy links); both ends up, or Node lists no address on it.
      const rootEnd = `pas${pid}x${serial}`.slice(0, 15);
      await ip('link', 'add', rootEnd, 'type', 'veth', 'peer', 'name', 'net1', 'netns', name);
      await ip('link', 'set', rootEnd, 'up');
      await ip('-n', name, 'addr', 'add', `${addresses.second}/32`, 'dev', 'net1');
      await ip('-n', name, 'link', 'set', 'net1', 'up');
    }
  } catch (error) {
    await remove();
    throw error;
  }
  return {
    name,
    ...(families.v4 ? { v4: addresses.v4 } : {}),
    ...(families.v6 ? { v6: addresses.v6 } : {}),
    ...(families.secondNetwork ? { second: { name: 'net1', address: addresses.second } } : {}),
    exec: ['ip', 'netns', 'exec', name],
    remove,
  };
}
