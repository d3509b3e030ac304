/**
 * A network namespace joined to the root namespace by a veth pair: from
 * inside it, the root namespace's 0.0.0.0 listeners are reachable on
 * `hostIp` as a pod-network client would reach a pod, never over loopback.
 * Names and addresses derive from the test's pid and a count of the
 * namespaces it made, so parallel runs never meet, nor does a namespace
 * the kernel is still tearing down meet the next one of the same file.
 */
import { execa } from 'execa';
import { nodeBin } from './paths.ts';

export interface Netns {
  name: string;
  /** The root namespace's end, as seen from inside. */
  hostIp: string;
  /** Sends raw HTTP/1.1 requests from inside; the path goes on the wire byte for byte. */
  send(requests: RawRequest[]): Promise<RawAnswer[]>;
  remove(): Promise<void>;
}

export interface RawRequest {
  port: number;
  method: string;
  path: string;
}

export interface RawAnswer extends RawRequest {
  /** 0 when the connection closed without a status line. */
  status: number;
  ms: number;
  body: string;
}

const ip = (...args: string[]) => execa('ip', args, { timeout: 10_000 });

/** Why namespaces cannot be made here, or undefined when they can. */
export async function netnsSkipReason(): Promise<string | undefined> {
  if (process.getuid?.() !== 0) return 'needs root to create a network namespace and a veth pair';
  const probe = `pa-probe-${process.pid}`;
  const made = await execa('ip', ['netns', 'add', probe], { reject: false, timeout: 10_000 });
  if (made.exitCode !== 0) return `\`ip netns add\` is not allowed here: ${made.stderr.trim()}`;
  await execa('ip', ['netns', 'del', probe], { reject: false, timeout: 10_000 });
  return undefined;
}

/** Makes the namespace; on any failure nothing is left behind. */
export async function makeNetns(label: string): Promise<Netns> {
  const pid = process.pid;
  const serial = made++;
  const name = `pa-${label}-${pid}-${serial}`;
  const [hostIp, innerIp] = pairAddresses(pid, serial);
  const outside = `pah${pid}x${serial}`;
  const inside = `pan${pid}x${serial}`;
  const remove = async () => void (await execa('ip', ['netns', 'del', name], { reject: false, timeout: 10_000 }));
  try {
    await ip('netns', 'add', name);
    await ip('link', 'add', outside, 'type', 'veth', 'peer', 'name', inside, 'netns', name);
    await ip('addr', 'add', `${hostIp}/30`, 'dev', outside);
    await ip('link', 'set', outside, 'up');
    await ip('-n', name, 'addr', 'add', `${innerIp}/30`, 'dev', inside);
    await ip('-n', name, 'link', 'set', inside, 'up');
    await ip('-n', name, 'link', 'set', 'lo', 'up');
  } catch (error) {
    await remove();
    throw error;
  }
  return { name, hostIp, send: (requests) => sendRaw(name, hostIp, requests), remove };
}

/** Namespaces this process has made: each gets its own names and /30. */
let made = 0;

/** A /30 in 198.19.64.0/18 (of the benchmarking range, apart from pods.ts' and dns-netns.ts' blocks) picked by pid and serial. */
function pairAddresses(pid: number, serial: number): [string, string] {
  const block = ((pid * 8 + serial) % 4_096) * 4;
  const at = (offset: number) => `198.19.${64 + ((block + offset) >> 8)}.${(block + offset) & 255}`;
  return [at(1), at(2)];
}

const clientScript = `
import { connect } from 'node:net';
const [host, json] = process.argv.slice(1);
const ask = ({ port, method, path }) => new Promise((resolve) => {
  let text = '';
  const socket = connect(port, host);
  const started = Date.now();
  socket.setTimeout(3000, () => socket.destroy());
  socket.on('data', (chunk) => (text += chunk));
  socket.on('error', () => {});
  socket.on('close', () => {
    const status = Number(/^HTTP\\/1\\.[01] (\\d{3})/.exec(text)?.[1] ?? 0);
    resolve({ port, method, path, status, ms: Date.now() - started, body: text.split('\\r\\n\\r\\n').slice(1).join('').slice(0, 200) });
  });
  socket.write(method + ' ' + path + ' HTTP/1.1\\r\\nHost: pod\\r\\nConnection: close\\r\\nContent-Length: 0\\r\\n\\r\\n');
});
const requests = JSON.parse(json);
const answers = [];
for (let i = 0; i < requests.length; i += 16) answers.push(...(await Promise.all(requests.slice(i, i + 16).map(ask))));
process.stdout.write(JSON.stringify(answers));
`;

async function sendRaw(name: string, host: string, requests: RawRequest[]): Promise<RawAnswer[]> {
  const result = await execa('ip', ['netns', 'exec', name, nodeBin, '--input-type=module', '-e', clientScript, host, JSON.stringify(requests)], {
    timeout: 120_000,
    reject: false,
  });
  if (result.exitCode !== 0)
    throw new Error(`the client in ${name} failed (${result.timedOut ? 'timed out' : `exit ${result.exitCode}`}): ${result.stderr.slice(0, 500)}`);
  return JSON.parse(result.stdout) as RawAnswer[];
}
