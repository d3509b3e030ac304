/**
 * The other modes under --native-nftables, in real namespaces, as
 * iptables-modes-netns checks them for iptables: DNS capture (UDP and TCP 53
 * to the agent's 15053, the proxy's own queries straight out), to every
 * server and to those of resolv.conf, and TPROXY. See test/support/iptables-pods.ts.
 */
import assert from 'node:assert/strict';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { before, describe, it } from 'node:test';
import { execa } from 'execa';
import { assertBundleFresh } from '../support/bundle-fresh.ts';
import { suiteCleanup } from '../support/cleanup.ts';
import {
  askUdp,
  connectOne,
  makePodPair,
  proxyUid,
  runIptables,
  startListener,
  startUdpServer,
  templateArgs,
  v4,
  type PodPair,
} from '../support/iptables-pods.ts';
import { iptablesRuleLines, nftRuleset, nftSkipReason } from '../support/nft-pods.ts';

const skip = (await nftSkipReason()) ?? false;
const native = [...templateArgs, '--native-nftables'];

describe("istio-iptables --native-nftables --redirect-dns: the app's DNS to the agent on 15053, never the proxy's own", { timeout: 120_000 }, () => {
  const cleanup = suiteCleanup();
  let pair: PodPair;

  it('with --capture-all-dns, redirects UDP and TCP 53 to every server', { skip }, async () => {
    assertBundleFresh();
    pair = await makePodPair(cleanup, 'nftdns', { v4: true, v6: false });
    const applied = await runIptables(pair.appNs, [...native, '--redirect-dns', '--capture-all-dns']);
    assert.equal(applied.exitCode, 0, applied.stderr);
    assert.deepEqual(await iptablesRuleLines(pair.appNs), []);
    await startUdpServer(cleanup, pair, pair.appNs, 'agent-dns', 15053);
    await startUdpServer(cleanup, pair, pair.peerNs, 'upstream-dns', 53);
    await startListener(cleanup, pair, pair.appNs, 'app', [15001, 15006, 15053], false);
    await startListener(cleanup, pair, pair.peerNs, 'peer', [53], false);
    assert.equal(await askUdp(pair, pair.appNs, v4.peer, 53), 'agent-dns', "the app's UDP query");
    assert.equal(await connectOne(pair, pair.appNs, v4.peer, 53), `app 15053 ${v4.peer}:53`, "the app's TCP query");
    assert.equal(await askUdp(pair, pair.appNs, v4.peer, 53, proxyUid), 'upstream-dns', "the agent's own upstream query is not looped");
    assert.match(await connectOne(pair, pair.appNs, v4.peer, 53, proxyUid), /^peer 53 /);
  });

  it('without it, only the servers of /etc/resolv.conf (ISTIO_META_DNS_CAPTURE=true)', { skip }, async () => {
    // `ip netns exec` mounts /etc/netns/<ns>/resolv.conf over /etc/resolv.conf.
    const dir = `/etc/netns/${pair.appNs}`;
    await mkdir(dir, { recursive: true });
    cleanup.defer(() => rm(dir, { recursive: true, force: true }));
    await writeFile(`${dir}/resolv.conf`, `nameserver ${v4.peer}\n`);
    const applied = await runIptables(pair.appNs, native, { env: { ISTIO_META_DNS_CAPTURE: 'true' } });
    assert.equal(applied.exitCode, 0, applied.stderr);
    assert.match(await nftRuleset(pair.appNs), new RegExp(`ip daddr ${v4.peer.replace(/\./g, '\\.')} udp dport 53 counter packets 0 bytes 0 redirect to :15053`));
    assert.equal(await askUdp(pair, pair.appNs, v4.peer, 53), 'agent-dns');
    assert.equal(await askUdp(pair, pair.appNs, v4.peer, 53, proxyUid), 'upstream-dns');
  });
});

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

describe('istio-iptables --native-nftables -m TPROXY', { skip, timeout: 120_000 }, () => {
  const cleanup = suiteCleanup();
  let pair: PodPair;
  const args = ['-p', '15001', '-z', '15006', '-u', String(proxyUid), '-m', 'TPROXY', '-i', '*', '-b', '8080', '--native-nftables'];
  let first: Awaited<ReturnType<typeof runIptables>>;

  before(async () => {
    assertBundleFresh();
    pair = await makePodPair(cleanup, 'nfttp', { v4: true, v6: false });
    first = await runIptables(pair.appNs, args);
  });

  it('writes the mangle table and routes marked packets to loopback', async () => {
    assert.equal(first.exitCode, 0, first.stderr);
    assert.match(await nftRuleset(pair.appNs), /tproxy ip to :15006 meta mark set 0x00000539/);
    assert.match((await execa('ip', ['-n', pair.appNs, 'route', 'show', 'table', '133', 'type', 'local'])).stdout, /local default dev lo/);
  });

  it('a rerun keeps the fwmark routing rule single', async () => {
    const result = await runIptables(pair.appNs, args);
    assert.equal(result.exitCode, 0, result.stderr);
    const rules = (await execa('ip', ['-n', pair.appNs, 'rule', 'show'])).stdout;
    assert.equal(rules.split('\n').filter((line) => /fwmark 0x539 lookup 133/.test(line)).length, 1, rules);
  });

  it('hands an inbound connection to the transparent listener on 15006 with its original address', async () => {
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
  });
});
