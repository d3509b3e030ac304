// A control plane behind a real link rather than loopback: a network
// namespace joined to this one by a veth pair, both ends rate-limited by tc
// (a token bucket), as istiod sits across a network from the sidecar.
import { execa } from 'execa';

export interface ShapedLink {
  /** The control plane's address, inside the namespace. */
  host: string;
  /** Prefix that runs a command inside the namespace. */
  exec: string[];
  close(): Promise<void>;
}

const ip = (...args: string[]) => execa('ip', args);

/** Undefined (with the reason printed) where namespaces or tc are not allowed. */
export async function shapedLink(rate: string): Promise<ShapedLink | undefined> {
  const ns = `pa-bench-${process.pid}`;
  const [outer, inner] = [`pab${process.pid % 100000}o`, `pab${process.pid % 100000}i`];
  try {
    await ip('netns', 'add', ns);
  } catch (error) {
    console.log(`shaped link skipped: cannot create a network namespace (${(error as Error).message.split('\n')[0]})`);
    return undefined;
  }
  const close = async () => void (await execa('ip', ['netns', 'del', ns], { reject: false }));
  try {
    await ip('link', 'add', outer, 'type', 'veth', 'peer', 'name', inner, 'netns', ns);
    await ip('addr', 'add', '198.19.201.1/30', 'dev', outer);
    await ip('link', 'set', outer, 'up');
    await ip('-n', ns, 'addr', 'add', '198.19.201.2/30', 'dev', inner);
    await ip('-n', ns, 'link', 'set', inner, 'up');
    await ip('-n', ns, 'link', 'set', 'lo', 'up');
    const shape = ['root', 'tbf', 'rate', rate, 'burst', '256kb', 'latency', '50ms'];
    await execa('tc', ['qdisc', 'add', 'dev', outer, ...shape]);
    await ip('netns', 'exec', ns, 'tc', 'qdisc', 'add', 'dev', inner, ...shape);
  } catch (error) {
    await close();
    console.log(`shaped link skipped: ${(error as Error).message.split('\n')[0]}`);
    return undefined;
  }
  return { host: '198.19.201.2', exec: ['ip', 'netns', 'exec', ns], close };
}
