/**
 * A pod namespace where iptables-legacy, iptables-nft and native nftables
 * rules meet (the capture mode switched between runs of istio-init). Istio
 * lets each mode ignore the others' rules; so do we, and say so in one line.
 * What happens then: every rule set sees every packet, and the kernel's NAT
 * hooks ask each in turn until one redirects a new connection, so a
 * connection any set captures is captured (once: the first redirect wins)
 * and an exclusion holds only where every set excludes it. Each mode's
 * --cleanup-only removes its own rules and leaves the others'.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { execa } from 'execa';
import { assertBundleFresh } from '../support/bundle-fresh.ts';
import { suiteCleanup } from '../support/cleanup.ts';
import { connectAll, connectOne, hostPort, makePodPair, runIptables, savedRules, startListener, templateArgs, v4, type PodPair } from '../support/iptables-pods.ts';
import { iptablesRuleLines, nftRuleset, nftSkipReason } from '../support/nft-pods.ts';

async function mixedSkipReason(): Promise<string | undefined> {
  const reason = await nftSkipReason();
  if (reason !== undefined) return reason;
  for (const tool of ['iptables-legacy-restore', 'iptables-nft-restore']) {
    if ((await execa(tool, ['--version'], { reject: false })).exitCode !== 0) return `${tool} is missing`;
  }
  return undefined;
}

const skip = (await mixedSkipReason()) ?? false;
/** The template's arguments with -d set: 9090 is excluded by one rule set and not by another. */
const withExcluded = (ports: string) => templateArgs.map((arg, at) => (templateArgs[at - 1] === '-d' ? ports : arg));

describe('a pod namespace with iptables-legacy, iptables-nft and native nftables capture rules at once', { timeout: 180_000 }, () => {
  const cleanup = suiteCleanup();
  let pair: PodPair;

  it('each mode applies beside the others, and says in one line that other capture rules are there', { skip }, async () => {
    assertBundleFresh();
    pair = await makePodPair(cleanup, 'mixed', { v4: true, v6: false });
    await startListener(cleanup, pair, pair.appNs, 'app', [15001, 15006, 8080, 9090], false);
    await startListener(cleanup, pair, pair.peerNs, 'peer', [8080], false);
    const legacy = await runIptables(pair.appNs, [...templateArgs, '--force-iptables-binary=legacy']);
    assert.equal(legacy.exitCode, 0, legacy.stderr);
    assert.doesNotMatch(legacy.stderr, /another mode/, 'nothing else is there yet');
    const native = await runIptables(pair.appNs, [...withExcluded('15090,15021,15020,9090'), '--native-nftables']);
    assert.equal(native.exitCode, 0, native.stderr);
    assert.match(native.stderr, /^pilot-agent istio-iptables: capture rules of another mode are also in this network namespace \(iptables-legacy\): .*removes them$/m);
    const nft = await runIptables(pair.appNs, [...templateArgs, '--force-iptables-binary=nft']);
    assert.equal(nft.exitCode, 0, nft.stderr);
    assert.match(nft.stderr, /another mode are also in this network namespace \(nftables inet istio-proxy-nat\)/);
    assert.equal((await iptablesRuleLines(pair.appNs)).filter((line) => line.startsWith('iptables-legacy-save')).length > 0, true);
    assert.match(await savedRules(pair.appNs, 'v4', 'nat'), /ISTIO_INBOUND/, 'iptables-nft has its rules too');
  });

  it('sends a connection all three sets would redirect to the capture port with its original destination', { skip }, async () => {
    assert.equal(await connectOne(pair, pair.peerNs, v4.app, 8080), `app 15006 ${hostPort(v4.app, 8080)}`);
    assert.equal(await connectOne(pair, pair.appNs, v4.peer, 8080), `app 15001 ${hostPort(v4.peer, 8080)}`);
  });

  it('captures a port the native rules exclude, because the iptables rules still capture it', { skip }, async () => {
    assert.equal(await connectOne(pair, pair.peerNs, v4.app, 9090), `app 15006 ${hostPort(v4.app, 9090)}`);
  });

  it("--native-nftables --cleanup-only removes only the native tables, and each iptables variant's cleanup only its own", { skip }, async () => {
    const native = await runIptables(pair.appNs, ['--native-nftables', '--cleanup-only']);
    assert.equal(native.exitCode, 0, native.stderr);
    assert.doesNotMatch(await nftRuleset(pair.appNs), /istio-proxy/);
    assert.equal((await iptablesRuleLines(pair.appNs)).length > 0, true, 'the iptables rules stay');
    assert.equal(await connectOne(pair, pair.peerNs, v4.app, 9090), `app 15006 ${hostPort(v4.app, 9090)}`, 'still captured by them');
    for (const variant of ['legacy', 'nft']) {
      const result = await runIptables(pair.appNs, [...templateArgs, '--cleanup-only', `--force-iptables-binary=${variant}`]);
      assert.equal(result.exitCode, 0, result.stderr);
    }
    assert.deepEqual(await iptablesRuleLines(pair.appNs), []);
    const answers = await connectAll(pair, pair.peerNs, v4.app, [8080, 9090]);
    assert.deepEqual([answers.get(8080), answers.get(9090)].map((answer) => answer?.split(' ').slice(0, 2).join(' ')), ['app 8080', 'app 9090']);
  });
});
