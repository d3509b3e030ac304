/**
 * Applies `pilot-agent istio-iptables` inside two network namespaces made
 * here ("app" with the rules, "peer" as the outside world, joined by a veth
 * pair) and checks where real TCP connections land. Python listeners answer
 * with their name, port and the connection's original destination
 * (SO_ORIGINAL_DST), so a reply says which socket got the connection.
 * The 10.251.0.0/30 addresses exist only inside these namespaces.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { execa, type ResultPromise } from 'execa';
import { assertBundleFresh } from '../support/bundle-fresh.ts';
import { agentBin, nodeBin } from '../support/paths.ts';

const appNs = `pa-ipt-app-${process.pid}`;
const peerNs = `pa-ipt-peer-${process.pid}`;
const appIp = '10.251.0.1';
const peerIp = '10.251.0.2';
const proxyUid = 1337;

const listenerScript = `
import socket, struct, sys, threading
label, ports = sys.argv[1], [int(p) for p in sys.argv[2:]]
def original_destination(conn):
    try:
        raw = conn.getsockopt(socket.SOL_IP, 80, 16)  # SO_ORIGINAL_DST
        port, addr = struct.unpack('!2xH4s8x', raw)
        return '%s:%d' % (socket.inet_ntoa(addr), port)
    except OSError:
        return '-'
def serve(sock, port):
    while True:
        conn, _ = sock.accept()
        with conn:
            conn.sendall(('%s %d %s\\n' % (label, port, original_destination(conn))).encode())
for port in ports:
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(('0.0.0.0', port))
    sock.listen(16)
    threading.Thread(target=serve, args=(sock, port), daemon=True).start()
print('ready', flush=True)
sys.stdin.read()  # the test closes stdin to stop us
`;

const clientScript = `
import encodings.idna, os, socket, sys  # idna: the interpreter's files may be unreadable after setuid
host, port, uid = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
if uid:
    os.setgroups([]); os.setgid(uid); os.setuid(uid)
with socket.create_connection((host, port), timeout=3) as sock:
    print(sock.makefile().readline().strip())
`;

async function succeeds(file: string, args: string[]): Promise<boolean> {
  const result = await execa(file, args, { reject: false, timeout: 10_000 });
  return result.exitCode === 0;
}

/** Why this sandbox cannot run the test, or undefined when it can. */
async function skipReason(): Promise<string | undefined> {
  if (process.getuid?.() !== 0) return 'needs root to create network namespaces';
  if (!(await succeeds('iptables-restore', ['--version']))) return 'iptables-restore is missing (run scripts/setup-iptables.sh)';
  if (!(await succeeds('python3', ['-c', 'pass']))) return 'python3 is missing';
  const probe = `pa-ipt-probe-${process.pid}`;
  if (!(await succeeds('ip', ['netns', 'add', probe]))) return '`ip netns add` is not allowed here';
  const nat = await succeeds('ip', ['netns', 'exec', probe, 'iptables', '-t', 'nat', '-S']);
  await succeeds('ip', ['netns', 'del', probe]);
  return nat ? undefined : 'the nat table is not available inside a network namespace';
}

const ip = (...args: string[]) => execa('ip', args, { timeout: 10_000 });

async function makeNamespaces(): Promise<void> {
  await ip('netns', 'add', appNs);
  await ip('netns', 'add', peerNs);
  await ip('-n', appNs, 'link', 'add', 'pa-app', 'type', 'veth', 'peer', 'name', 'pa-peer', 'netns', peerNs);
  for (const [ns, dev, address] of [[appNs, 'pa-app', appIp], [peerNs, 'pa-peer', peerIp]] as const) {
    await ip('-n', ns, 'addr', 'add', `${address}/30`, 'dev', dev);
    await ip('-n', ns, 'link', 'set', dev, 'up');
    await ip('-n', ns, 'link', 'set', 'lo', 'up');
  }
}

/** Runs the real binary inside the app namespace, with the injector's flags. */
async function applyCapture(): Promise<void> {
  const argv = ['istio-iptables', '-p', '15001', '-z', '15006', '-u', String(proxyUid), '-m', 'REDIRECT',
    '-i', '*', '-x', '', '-b', '*', '-d', '15090,15021,15020'];
  const result = await execa('ip', ['netns', 'exec', appNs, nodeBin, agentBin, ...argv], { reject: false, timeout: 20_000 });
  assert.equal(result.exitCode, 0, `istio-iptables failed: ${result.stderr}`);
}

/** The app namespace's nat rules, without iptables-save's dated comments and packet counters. */
async function natRules(): Promise<string> {
  const { stdout } = await execa('ip', ['netns', 'exec', appNs, 'iptables-save', '-t', 'nat']);
  return stdout.split('\n').filter((line) => !line.startsWith('#')).map((line) => line.replace(/ \[\d+:\d+\]$/, '')).join('\n');
}

/** Resolves once every port is bound; wrapped because a subprocess is itself a promise. */
async function startListener(python: string, ns: string, label: string, ports: number[]): Promise<{ child: ResultPromise }> {
  const child = execa('ip', ['netns', 'exec', ns, python, '-c', listenerScript, label, ...ports.map(String)], {
    stdin: 'pipe',
    reject: false,
    timeout: 60_000,
  });
  await new Promise<void>((resolve, reject) => {
    child.stdout?.once('data', () => resolve());
    child.once('exit', (code) => reject(new Error(`listener ${label} exited early (${code})`)));
  });
  return { child };
}

/** Connects from `ns` as `uid`; resolves to the answering listener's line. */
async function connect(python: string, ns: string, host: string, port: number, uid = 0): Promise<string> {
  const result = await execa('ip', ['netns', 'exec', ns, python, '-c', clientScript, host, String(port), String(uid)], {
    timeout: 10_000,
  });
  return result.stdout.trim();
}

const reason = await skipReason();

// Each test is skipped on its own (not the suite), so the runner counts and prints the skips.
const skip = reason ?? false;

describe('istio-iptables in a network namespace', { timeout: 60_000 }, () => {
  const listeners: { child: ResultPromise }[] = [];
  let python = 'python3';

  before(async () => {
    if (skip) return;
    assertBundleFresh();
    python = (await execa('python3', ['-c', 'import sys; print(sys.executable)'])).stdout.trim();
    await makeNamespaces();
    await applyCapture();
    listeners.push(await startListener(python, appNs, 'app', [15001, 15006, 15021, 8080]));
    listeners.push(await startListener(python, peerNs, 'peer', [8080]));
  });

  after(async () => {
    if (skip) return;
    try {
      for (const { child } of listeners) {
        child.stdin?.end();
        child.kill('SIGKILL');
        await child;
      }
    } finally {
      await execa('ip', ['netns', 'del', appNs], { reject: false });
      await execa('ip', ['netns', 'del', peerNs], { reject: false });
    }
  });

  it('installs the four Istio chains in the nat table', { skip }, async () => {
    const { stdout } = await execa('ip', ['netns', 'exec', appNs, 'iptables-save', '-t', 'nat']);
    for (const chain of ['ISTIO_INBOUND', 'ISTIO_IN_REDIRECT', 'ISTIO_OUTPUT', 'ISTIO_REDIRECT']) {
      assert.match(stdout, new RegExp(`^:${chain} `, 'm'));
    }
  });

  it("sends the app's outbound connection to the outbound capture port 15001", { skip }, async () => {
    assert.equal(await connect(python, appNs, peerIp, 8080), `app 15001 ${peerIp}:8080`);
  });

  it('lets the proxy (UID 1337) reach the outside directly', { skip }, async () => {
    assert.match(await connect(python, appNs, peerIp, 8080, proxyUid), /^peer 8080 /);
  });

  it('sends inbound connections to an app port to the inbound capture port 15006', { skip }, async () => {
    assert.equal(await connect(python, peerNs, appIp, 8080), `app 15006 ${appIp}:8080`);
  });

  it('does not capture an excluded inbound port (-d)', { skip }, async () => {
    assert.match(await connect(python, peerNs, appIp, 15021), /^app 15021 /);
  });

  it('does not capture the app calling localhost', { skip }, async () => {
    assert.match(await connect(python, appNs, '127.0.0.1', 8080), /^app 8080 /);
  });

  it('refuses bad flags with exit code 2 and one line, changing no rule', { skip }, async () => {
    const before = await natRules();
    const result = await execa('ip', ['netns', 'exec', appNs, nodeBin, agentBin, 'istio-iptables', '-p', '15001', '-b', '8080', '-d', '8080'], { reject: false, timeout: 20_000 });
    assert.equal(result.exitCode, 2, result.stderr);
    assert.equal(result.stderr, 'pilot-agent: -d: port 8080 is also in the captured inbound ports (-b)', 'one line (execa strips the final newline)');
    assert.equal(await natRules(), before, 'the rules are unchanged');
  });
});
