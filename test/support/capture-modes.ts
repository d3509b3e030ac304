/**
 * The cases iptables-modes-netns and nftables-modes-netns share: DNS capture
 * and TPROXY, checked the same way whichever backend wrote the rules.
 * See test/support/iptables-pods.ts for the pod pair and its listeners.
 */
import assert from 'node:assert/strict';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { execa } from 'execa';
import type { Cleanup } from './cleanup.ts';
import { askUdp, connectOne, proxyUid, startListener, startUdpServer, v4, type PodPair } from './iptables-pods.ts';

/** With --capture-all-dns: the app's UDP and TCP 53 reach the agent on 15053; the proxy's own queries go out. */
export async function assertAllDnsCaptured(cleanup: Cleanup, pair: PodPair): Promise<void> {
  await startUdpServer(cleanup, pair, pair.appNs, 'agent-dns', 15053);
  await startUdpServer(cleanup, pair, pair.peerNs, 'upstream-dns', 53);
  await startListener(cleanup, pair, pair.appNs, 'app', [15001, 15006, 15053], false);
  await startListener(cleanup, pair, pair.peerNs, 'peer', [53], false);
  assert.equal(await askUdp(pair, pair.appNs, v4.peer, 53), 'agent-dns', "the app's UDP query");
  assert.equal(await connectOne(pair, pair.appNs, v4.peer, 53), `app 15053 ${v4.peer}:53`, "the app's TCP query");
  assert.equal(await askUdp(pair, pair.appNs, v4.peer, 53, proxyUid), 'upstream-dns', "the agent's own upstream query is not looped");
  assert.match(await connectOne(pair, pair.appNs, v4.peer, 53, proxyUid), /^peer 53 /);
}

/** Makes the peer the app namespace's only nameserver (removed by `cleanup`). */
export async function resolvConfAtPeer(cleanup: Cleanup, pair: PodPair): Promise<void> {
  // `ip netns exec` mounts /etc/netns/<ns>/resolv.conf over /etc/resolv.conf.
  const dir = `/etc/netns/${pair.appNs}`;
  await mkdir(dir, { recursive: true });
  cleanup.defer(() => rm(dir, { recursive: true, force: true }));
  await writeFile(`${dir}/resolv.conf`, `nameserver ${v4.peer}\n`);
}

/** After assertAllDnsCaptured's servers: the app's query to resolv.conf's server reaches the agent, the proxy's goes out. */
export async function assertResolvConfDnsCaptured(pair: PodPair): Promise<void> {
  assert.equal(await askUdp(pair, pair.appNs, v4.peer, 53), 'agent-dns');
  assert.equal(await askUdp(pair, pair.appNs, v4.peer, 53, proxyUid), 'upstream-dns');
}

/** Istio's TPROXY arguments with an inbound port 8080; `extra` adds a backend's flag. */
export const tproxyArgs = (...extra: string[]) => ['-p', '15001', '-z', '15006', '-u', String(proxyUid), '-m', 'TPROXY', '-i', '*', '-b', '8080', ...extra];

/** Marked packets go to loopback: table 133 holds the local default route. */
export async function assertTproxyRoute(ns: string): Promise<void> {
  assert.match((await execa('ip', ['-n', ns, 'route', 'show', 'table', '133', 'type', 'local'])).stdout, /local default dev lo/);
}

/** A rerun adds no second fwmark routing rule. */
export async function assertSingleFwmarkRule(ns: string): Promise<void> {
  const rules = (await execa('ip', ['-n', ns, 'rule', 'show'])).stdout;
  assert.equal(rules.split('\n').filter((line) => /fwmark 0x539 lookup 133/.test(line)).length, 1, rules);
}

/** A transparent (IP_TRANSPARENT) listener, as Envoy's under TPROXY: it answers with the address the client dialled. */
const transparentScript = `
import socket, sys
sock = socket.socket()
sock.setsockopt(socket.SOL_IP, 19, 1)  # IP_TRANSPARENT
sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
sock.bind(('0.0.0.0', int(sys.argv[1])))
sock.listen(16)
print('ready', flush=True)
while True:
    conn, _ = sock.accept()
    with conn:
        host, port = conn.getsockname()
        conn.sendall(('tproxy %s:%d\\n' % (host, port)).encode())
`;

/** An inbound connection to 8080 reaches the transparent listener on 15006 with its original address. */
export async function assertTransparentHandoff(cleanup: Cleanup, pair: PodPair): Promise<void> {
  const listener = execa('ip', ['netns', 'exec', pair.appNs, pair.python, '-c', transparentScript, '15006'], { reject: false, timeout: 60_000 });
  cleanup.defer(async () => {
    listener.kill('SIGKILL');
    await listener;
  });
  await new Promise<void>((resolve, reject) => {
    listener.stdout?.once('data', () => resolve());
    void listener.then((result) => reject(new Error(`transparent listener exited (${result.exitCode}): ${result.stderr}`)));
  });
  await startListener(cleanup, pair, pair.appNs, 'app', [8080], false);
  assert.equal(await connectOne(pair, pair.peerNs, v4.app, 8080), `tproxy ${v4.app}:8080`);
}
