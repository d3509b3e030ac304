/**
 * The other modes under --native-nftables, in real namespaces, as
 * iptables-modes-netns checks them for iptables: DNS capture (UDP and TCP 53
 * to the agent's 15053, the proxy's own queries straight out), to every
 * server and to those of resolv.conf, and TPROXY. See test/support/iptables-pods.ts.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { assertBundleFresh } from '../support/bundle-fresh.ts';
import { suiteCleanup } from '../support/cleanup.ts';
import {
  assertAllDnsCaptured,
  assertResolvConfDnsCaptured,
  assertSingleFwmarkRule,
  assertTproxyRoute,
  assertTransparentHandoff,
  resolvConfAtPeer,
  tproxyArgs,
} from '../support/capture-modes.ts';
import { makePodPair, runIptables, templateArgs, v4, type PodPair } from '../support/iptables-pods.ts';
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
    await assertAllDnsCaptured(cleanup, pair);
  });

  it('without it, only the servers of /etc/resolv.conf (ISTIO_META_DNS_CAPTURE=true)', { skip }, async () => {
    await resolvConfAtPeer(cleanup, pair);
    const applied = await runIptables(pair.appNs, native, { env: { ISTIO_META_DNS_CAPTURE: 'true' } });
    assert.equal(applied.exitCode, 0, applied.stderr);
    assert.match(await nftRuleset(pair.appNs), new RegExp(`ip daddr ${v4.peer.replace(/\./g, '\\.')} udp dport 53 counter packets 0 bytes 0 redirect to :15053`));
    await assertResolvConfDnsCaptured(pair);
  });
});

describe('istio-iptables --native-nftables -m TPROXY', { skip, timeout: 120_000 }, () => {
  const cleanup = suiteCleanup();
  let pair: PodPair;
  const args = tproxyArgs('--native-nftables');
  let first: Awaited<ReturnType<typeof runIptables>>;

  before(async () => {
    assertBundleFresh();
    pair = await makePodPair(cleanup, 'nfttp', { v4: true, v6: false });
    first = await runIptables(pair.appNs, args);
  });

  it('writes the mangle table and routes marked packets to loopback', async () => {
    assert.equal(first.exitCode, 0, first.stderr);
    assert.match(await nftRuleset(pair.appNs), /tproxy ip to :15006 meta mark set 0x00000539/);
    await assertTproxyRoute(pair.appNs);
  });

  it('a rerun keeps the fwmark routing rule single', async () => {
    const result = await runIptables(pair.appNs, args);
    assert.equal(result.exitCode, 0, result.stderr);
    await assertSingleFwmarkRule(pair.appNs);
  });

  it('hands an inbound connection to the transparent listener on 15006 with its original address', async () => {
    await assertTransparentHandoff(cleanup, pair);
  });
});
