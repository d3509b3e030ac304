/**
 * Two network namespaces per case, "app" (where `pilot-agent istio-iptables`
 * runs) and "peer" (the pod network), joined by a veth pair with IPv4
 * (198.19.251.0/30), IPv6 (2001:2:0:251::/64, the IPv6 benchmarking range) or both. The addresses exist only
 * inside these namespaces; names derive from the test's pid and a label.
 * Python listeners answer with their name, the port they listen on and the
 * connection's original destination (SO_ORIGINAL_DST, IPv4 and IPv6), so a
 * reply says which socket got a connection and where it was headed.
 */
import { execa, type ResultPromise } from 'execa';
import type { Cleanup } from './cleanup.ts';
import { agentBin, nodeBin, uidCannotRunCheckout } from './paths.ts';

export const proxyUid = 1337;

export interface Family {
  app: string;
  peer: string;
}

export const v4: Family = { app: '198.19.251.1', peer: '198.19.251.2' };
export const v6: Family = { app: '2001:2:0:251::1', peer: '2001:2:0:251::2' };

const listenerScript = `
import socket, struct, sys, threading
label, v6, ports = sys.argv[1], sys.argv[2] == '1', [int(p) for p in sys.argv[3:]]
def original_destination(conn, family):
    try:
        if family == socket.AF_INET:
            port, addr = struct.unpack('!2xH4s8x', conn.getsockopt(socket.SOL_IP, 80, 16))
            return '%s:%d' % (socket.inet_ntoa(addr), port)
        port, addr = struct.unpack('!2xH4x16s4x', conn.getsockopt(41, 80, 28))
        return '[%s]:%d' % (socket.inet_ntop(socket.AF_INET6, addr), port)
    except OSError:
        return '-'
def serve(sock, port, family):
    while True:
        conn, _ = sock.accept()
        with conn:
            conn.sendall(('%s %d %s\\n' % (label, port, original_destination(conn, family))).encode())
for port in ports:
    for family, host in [(socket.AF_INET, '0.0.0.0')] + ([(socket.AF_INET6, '::')] if v6 else []):
        sock = socket.socket(family)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.bind((host, port))
        sock.listen(64)
        threading.Thread(target=serve, args=(sock, port, family), daemon=True).start()
print('ready', flush=True)
sys.stdin.read()  # the test closes stdin to stop us
`;

/** Connects to each port in turn; prints "port answer" with the listener's line, "refused" or "timeout". */
const clientScript = `
import encodings.idna, os, socket, sys  # idna: the interpreter's files may be unreadable after setuid
host, uid, ports = sys.argv[1], int(sys.argv[2]), [int(p) for p in sys.argv[3:]]
if uid:
    os.setgroups([]); os.setgid(uid); os.setuid(uid)
for port in ports:
    try:
        with socket.create_connection((host, port), timeout=3) as sock:
            sock.settimeout(3)
            answer = sock.makefile().readline().strip() or 'closed'
    except ConnectionRefusedError:
        answer = 'refused'
    except (socket.timeout, TimeoutError):
        answer = 'timeout'
    except ConnectionResetError:
        answer = 'reset'
    print(port, answer, flush=True)
`;

async function succeeds(file: string, args: string[]): Promise<boolean> {
  const result = await execa(file, args, { reject: false, timeout: 10_000 });
  return result.exitCode === 0;
}

/** Why this sandbox cannot run the tests, or undefined when it can. */
export async function iptablesSkipReason(): Promise<string | undefined> {
  if (process.getuid?.() !== 0) return 'needs root to create network namespaces';
  for (const tool of ['iptables-restore', 'ip6tables-restore', 'setpriv']) {
    if (!(await succeeds(tool, ['--version']))) return `${tool} is missing (run scripts/setup-iptables.sh)`;
  }
  if (!(await succeeds('python3', ['-c', 'pass']))) return 'python3 is missing';
  const unreadable = uidCannotRunCheckout(proxyUid);
  if (unreadable) return unreadable;
  const probe = `pa-ipt-probe-${process.pid}`;
  if (!(await succeeds('ip', ['netns', 'add', probe]))) return '`ip netns add` is not allowed here';
  const nat =
    (await succeeds('ip', ['netns', 'exec', probe, 'iptables', '-t', 'nat', '-S'])) &&
    (await succeeds('ip', ['netns', 'exec', probe, 'ip6tables', '-t', 'nat', '-S']));
  await succeeds('ip', ['netns', 'del', probe]);
  return nat ? undefined : 'the nat table is not available inside a network namespace';
}

const ip = (...args: string[]) => execa('ip', args, { timeout: 10_000 });

export interface PodPair {
  appNs: string;
  peerNs: string;
  python: string;
}

/** Makes the two namespaces (removed by `cleanup`) with the asked families. */
export async function makePodPair(cleanup: Cleanup, label: string, families: { v4: boolean; v6: boolean }): Promise<PodPair> {
  const appNs = `pa-ipt-${label}-${process.pid}`;
  const peerNs = `pa-ipt-${label}-peer-${process.pid}`;
  for (const ns of [appNs, peerNs]) {
    await ip('netns', 'add', ns);
    cleanup.defer(async () => void (await execa('ip', ['netns', 'del', ns], { reject: false })));
  }
  await ip('-n', appNs, 'link', 'add', 'pa-app', 'type', 'veth', 'peer', 'name', 'pa-peer', 'netns', peerNs);
  for (const [ns, dev, side] of [[appNs, 'pa-app', 'app'], [peerNs, 'pa-peer', 'peer']] as const) {
    if (families.v4) await ip('-n', ns, 'addr', 'add', `${v4[side]}/30`, 'dev', dev);
    // nodad: the address is usable at once, not after duplicate detection.
    if (families.v6) await ip('-n', ns, 'addr', 'add', `${v6[side]}/64`, 'dev', dev, 'nodad');
    await ip('-n', ns, 'link', 'set', dev, 'up');
    await ip('-n', ns, 'link', 'set', 'lo', 'up');
  }
  const python = (await execa('python3', ['-c', 'import sys; print(sys.executable)'])).stdout.trim();
  return { appNs, peerNs, python };
}

/** `ip` by its path, so a test can hand the agent a PATH without it. */
const ipBin = (await execa('sh', ['-c', 'command -v ip'], { reject: false })).stdout.trim() || 'ip';

/** Runs the real binary inside `ns`; `uid` runs it as that user (setpriv); `path` replaces PATH. */
export function runIptables(ns: string, args: string[], options: { env?: Record<string, string>; uid?: number; path?: string } = {}) {
  const asUser = options.uid === undefined ? [] : ['setpriv', `--reuid=${options.uid}`, `--regid=${options.uid}`, '--clear-groups'];
  const env = { ...options.env, ...(options.path === undefined ? {} : { PATH: options.path }) };
  return execa(ipBin, ['netns', 'exec', ns, ...asUser, nodeBin, agentBin, 'istio-iptables', ...args], {
    reject: false,
    timeout: 30_000,
    env,
    extendEnv: options.path === undefined,
  });
}

/** The arguments of Istio's injection template with the chart's defaults. */
export const templateArgs = [
  '-p',
  '15001',
  '-z',
  '15006',
  '-u',
  String(proxyUid),
  '-m',
  'REDIRECT',
  '-i',
  '*',
  '-x',
  '',
  '-b',
  '*',
  '-d',
  '15090,15021,15020',
  '--log_output_level=default:info',
];

/** The namespace's rules as iptables-save prints them, without its dated comments and packet counters. */
export async function savedRules(ns: string, family: 'v4' | 'v6', table?: string): Promise<string> {
  const tool = family === 'v4' ? 'iptables-save' : 'ip6tables-save';
  const { stdout } = await execa('ip', ['netns', 'exec', ns, tool, ...(table ? ['-t', table] : [])]);
  return stdout.split('\n').filter((line) => !line.startsWith('#')).map((line) => line.replace(/ \[\d+:\d+\]$/, '')).join('\n');
}

/** Starts listeners on `ports` (IPv6 too with `v6`); stopped by `cleanup`. */
export async function startListener(cleanup: Cleanup, pair: PodPair, ns: string, label: string, ports: number[], withV6: boolean): Promise<void> {
  const child: ResultPromise = execa('ip', ['netns', 'exec', ns, pair.python, '-c', listenerScript, label, withV6 ? '1' : '0', ...ports.map(String)], {
    stdin: 'pipe',
    reject: false,
    timeout: 120_000,
  });
  cleanup.defer(async () => {
    child.stdin?.end();
    child.kill('SIGKILL');
    await child;
  });
  await new Promise<void>((resolve, reject) => {
    child.stdout?.once('data', () => resolve());
    void child.then((result) => reject(new Error(`listener ${label} exited early (${result.exitCode}): ${result.stderr}`)));
  });
}

/** Connects from `ns` to each port of `host` as `uid`; the answers by port. */
export async function connectAll(pair: PodPair, ns: string, host: string, ports: number[], uid = 0): Promise<Map<number, string>> {
  const result = await execa('ip', ['netns', 'exec', ns, pair.python, '-c', clientScript, host, String(uid), ...ports.map(String)], { timeout: 60_000 });
  return new Map(result.stdout.split('\n').filter(Boolean).map((line) => {
    const [port, ...answer] = line.split(' ');
    return [Number(port), answer.join(' ')] as const;
  }));
}

export async function connectOne(pair: PodPair, ns: string, host: string, port: number, uid = 0): Promise<string> {
  return (await connectAll(pair, ns, host, [port], uid)).get(port)!;
}

/** `[addr]:port` for IPv6, `addr:port` for IPv4, as the listener prints an original destination. */
export function hostPort(address: string, port: number): string {
  return address.includes(':') ? `[${address}]:${port}` : `${address}:${port}`;
}

/** UDP: a server answering every datagram with its label, or a client printing the answer ("timeout" if none). */
const udpScript = `
import encodings.idna, os, socket, sys
mode = sys.argv[1]
if mode == 'serve':
    label, port = sys.argv[2], int(sys.argv[3])
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(('0.0.0.0', port))
    print('ready', flush=True)
    while True:
        data, peer = sock.recvfrom(512)
        sock.sendto(label.encode(), peer)
else:
    host, port, uid = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    if uid:
        os.setgroups([]); os.setgid(uid); os.setuid(uid)
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.settimeout(3)
    sock.sendto(b'query', (host, port))
    try:
        print(sock.recvfrom(512)[0].decode())
    except (socket.timeout, TimeoutError):
        print('timeout')
`;

export async function startUdpServer(cleanup: Cleanup, pair: PodPair, ns: string, label: string, port: number): Promise<void> {
  const child: ResultPromise = execa('ip', ['netns', 'exec', ns, pair.python, '-c', udpScript, 'serve', label, String(port)], {
    reject: false,
    timeout: 120_000,
  });
  cleanup.defer(async () => {
    child.kill('SIGKILL');
    await child;
  });
  await new Promise<void>((resolve, reject) => {
    child.stdout?.once('data', () => resolve());
    void child.then((result) => reject(new Error(`UDP server ${label} exited early (${result.exitCode}): ${result.stderr}`)));
  });
}

/** Sends one datagram from `ns` as `uid`; the answering server's label, or "timeout". */
export async function askUdp(pair: PodPair, ns: string, host: string, port: number, uid = 0): Promise<string> {
  const result = await execa('ip', ['netns', 'exec', ns, pair.python, '-c', udpScript, 'ask', host, String(port), String(uid)], { timeout: 20_000 });
  return result.stdout.trim();
}
