/**
 * `pilot-agent istio-iptables --native-nftables` applied for real in network
 * namespaces holding no iptables rule at all: where real TCP connections
 * land (IPv4 pod, IPv6-only pod, dual-stack pod), and what --cleanup-only,
 * a rerun and bad input leave in `nft list ruleset`. The same cases as the
 * iptables mode's (iptables-netns, iptables-ipv6-netns); see test/support/iptables-pods.ts.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { execa } from 'execa';
import { assertBundleFresh } from '../support/bundle-fresh.ts';
import { suiteCleanup } from '../support/cleanup.ts';
import {
  connectAll,
  connectOne,
  hostPort,
  makePodPair,
  proxyUid,
  runIptables,
  startListener,
  templateArgs,
  v4,
  v6,
  type Family,
  type PodPair,
} from '../support/iptables-pods.ts';
import { iptablesRuleLines, nftRuleset, nftSkipReason } from '../support/nft-pods.ts';

const skip = (await nftSkipReason()) ?? false;
const native = [...templateArgs, '--native-nftables'];

const appPorts = [22, 80, 443, 3306, 8080, 9090];
const proxyPorts = [15001, 15006, 15021];

for (const variant of [
  { label: 'nft4', name: 'an IPv4 pod', families: { v4: true, v6: false }, addresses: [v4], env: {} as Record<string, string> },
  { label: 'nft6', name: 'an IPv6-only pod', families: { v4: false, v6: true }, addresses: [v6], env: {} },
  { label: 'nftds', name: 'a dual-stack pod with ISTIO_DUAL_STACK=true', families: { v4: true, v6: true }, addresses: [v4, v6], env: { ISTIO_DUAL_STACK: 'true' } },
]) {
  describe(`istio-iptables --native-nftables in ${variant.name}, with the injection template's arguments`, { timeout: 180_000 }, () => {
    const cleanup = suiteCleanup();
    let pair: PodPair;
    let before = '';

    it('sets up with nftables rules only: no iptables rule of either variant', { skip }, async () => {
      assertBundleFresh();
      pair = await makePodPair(cleanup, variant.label, variant.families);
      before = await nftRuleset(pair.appNs);
      const result = await runIptables(pair.appNs, native, { env: variant.env });
      assert.equal(result.exitCode, 0, result.stderr);
      assert.equal(result.stderr, 'pilot-agent istio-iptables: nftables: istio-proxy-nat written', 'one line, no warning');
      assert.deepEqual(await iptablesRuleLines(pair.appNs), []);
      assert.match(await nftRuleset(pair.appNs), /table inet istio-proxy-nat \{/);
      await startListener(cleanup, pair, pair.appNs, 'app', [...proxyPorts, ...appPorts], variant.families.v6);
      await startListener(cleanup, pair, pair.peerNs, 'peer', [8080], variant.families.v6);
    });

    for (const family of variant.addresses) addressCases(family, () => pair);

    if (!variant.families.v4) {
      it('passes the validation over ::1 and ::6, as Istio does for an IPv6 pod', { skip }, async () => {
        // Our listeners hold 15001 and 15006 on every address; the validation gets its own pair of ports.
        const ports = ['-p', '16001', '-z', '16006'];
        const applied = await runIptables(pair.appNs, [...ports, '-u', String(proxyUid), '-b', '*', '-i', '*', '--native-nftables']);
        assert.equal(applied.exitCode, 0, applied.stderr);
        const validated = await runIptables(pair.appNs, [...ports, '--run-validation', '--skip-rule-apply', '--native-nftables'], { uid: proxyUid });
        assert.equal(validated.exitCode, 0, validated.stderr);
        assert.match(validated.stderr, /validation passed/);
      });
    }

    it('--cleanup-only leaves nft list ruleset as it found it, and the pod uncaptured', { skip }, async () => {
      const result = await runIptables(pair.appNs, [...native, '--cleanup-only']);
      assert.equal(result.exitCode, 0, result.stderr);
      assert.equal(await nftRuleset(pair.appNs), before);
      const family = variant.addresses[0]!;
      assert.match(await connectOne(pair, pair.peerNs, family.app, 8080), /^app 8080 /);
      assert.match(await connectOne(pair, pair.appNs, family.peer, 8080), /^peer 8080 /);
      const again = await runIptables(pair.appNs, [...native, '--cleanup-only']);
      assert.equal(again.exitCode, 0, `a second cleanup finds nothing and is fine: ${again.stderr}`);
    });
  });
}

describe('istio-iptables --native-nftables in a dual-stack pod without ISTIO_DUAL_STACK (beyond Istio: the IPv6 exemptions too)', { timeout: 120_000 }, () => {
  const cleanup = suiteCleanup();
  let pair: PodPair;
  let stderr = '';

  it('sets up, saying in one line that the inet tables capture its IPv6 and its IPv6 exemptions are written', { skip }, async () => {
    assertBundleFresh();
    pair = await makePodPair(cleanup, 'nftdsr', { v4: true, v6: true });
    const result = await runIptables(pair.appNs, native);
    assert.equal(result.exitCode, 0, result.stderr);
    stderr = result.stderr;
    await startListener(cleanup, pair, pair.appNs, 'app', [...proxyPorts, ...appPorts], true);
    await startListener(cleanup, pair, pair.peerNs, 'peer', [8080], true);
    assert.match(stderr, /^pilot-agent istio-iptables: the pod has IPv6 address 2001:2:0:251::1 but dual stack is off .*\(::1, ::6\) are written too$/m);
    const { stdout } = await execa('ip', ['-n', pair.appNs, '-6', 'addr', 'show', 'dev', 'lo']);
    assert.match(stdout, /inet6 ::6\/128/);
  });

  for (const family of [v4, v6]) addressCases(family, () => pair);
});

/** The capture cases of one address family of the pod. */
function addressCases(family: Family, pod: () => PodPair): void {
  const name = family === v4 ? 'IPv4' : 'IPv6';
  it(`${name}: sends a plaintext connection to every port of the pod, 22 included, to the inbound capture port`, { skip }, async () => {
    const ports = [...appPorts, 7777];
    const answers = await connectAll(pod(), pod().peerNs, family.app, ports);
    assert.deepEqual(ports.map((port) => answers.get(port)), ports.map((port) => `app 15006 ${hostPort(family.app, port)}`));
  });

  it(`${name}: does not capture an excluded inbound port (-d)`, { skip }, async () => {
    assert.match(await connectOne(pod(), pod().peerNs, family.app, 15021), /^app 15021 /);
  });

  it(`${name}: sends the app's outbound connection to 15001, and lets the proxy (UID 1337) reach the outside directly`, { skip }, async () => {
    assert.equal(await connectOne(pod(), pod().appNs, family.peer, 8080), `app 15001 ${hostPort(family.peer, 8080)}`);
    assert.match(await connectOne(pod(), pod().appNs, family.peer, 8080, proxyUid), /^peer 8080 /);
  });

  it(`${name}: sends the proxy's call to the pod's own IP to the inbound port, except the tunnel port`, { skip }, async () => {
    assert.equal(await connectOne(pod(), pod().appNs, family.app, 8080, proxyUid), `app 15006 ${hostPort(family.app, 8080)}`);
    assert.equal(await connectOne(pod(), pod().appNs, family.app, 15008, proxyUid), 'refused', 'nothing listens on 15008 and nothing redirects it');
  });

  it(`${name}: does not capture the app calling localhost`, { skip }, async () => {
    assert.match(await connectOne(pod(), pod().appNs, family === v4 ? '127.0.0.1' : '::1', 8080), /^app 8080 /);
  });
}

describe('istio-iptables --native-nftables: reruns, validation and bad input', { timeout: 120_000 }, () => {
  const cleanup = suiteCleanup();
  let pair: PodPair;

  it('a rerun with other flags replaces the tables whole: nothing of the first run stays, not even an empty chain', { skip }, async () => {
    assertBundleFresh();
    pair = await makePodPair(cleanup, 'nftre', { v4: true, v6: false });
    const first = await runIptables(pair.appNs, [...native, '--redirect-dns', '--capture-all-dns', '--drop-invalid']);
    assert.equal(first.exitCode, 0, first.stderr);
    assert.match(await nftRuleset(pair.appNs), /table inet istio-proxy-raw/);
    const second = await runIptables(pair.appNs, native);
    assert.equal(second.exitCode, 0, second.stderr);
    const ruleset = await nftRuleset(pair.appNs);
    assert.doesNotMatch(ruleset, /istio-proxy-raw|istio-proxy-mangle|istio-output-dns|15053/, ruleset);
    const fresh = await makePodPair(cleanup, 'nftre2', { v4: true, v6: false });
    assert.equal((await runIptables(fresh.appNs, native)).exitCode, 0);
    assert.equal(ruleset, await nftRuleset(fresh.appNs), 'the same as a first run with these flags');
  });

  it('passes the validation as the proxy user (Istio CNI\'s istio-validation) once the rules redirect', { skip }, async () => {
    const result = await runIptables(pair.appNs, ['--native-nftables', '--run-validation', '--skip-rule-apply'], { uid: proxyUid });
    assert.equal(result.exitCode, 0, result.stderr);
    assert.match(result.stderr, /validation passed/);
  });

  it('refuses bad flags with exit code 2 and one line, changing no rule', { skip }, async () => {
    const before = await nftRuleset(pair.appNs);
    for (const [args, env, line] of [
      [['-b', '8080', '-d', '8080'], {}, 'pilot-agent: -d: port 8080 is also in the captured inbound ports (-b)'],
      [[], { ISTIO_INBOUND_PORTS: '22,x' }, 'pilot-agent: env ISTIO_INBOUND_PORTS: port "x" is not an integer from 1 to 65535'],
      [['-m', 'TPROXY', '-t', '0'], {}, 'pilot-agent: -t: "0" is not an integer from 1 to 4294967295'],
    ] as const) {
      const result = await runIptables(pair.appNs, ['--native-nftables', ...args], { env: { ...env } });
      assert.equal(result.exitCode, 2, result.stderr);
      assert.equal(result.stderr, line, 'one line (execa strips the final newline)');
    }
    assert.equal(await nftRuleset(pair.appNs), before, 'the rules are unchanged');
  });

  it('refuses with exit code 2 and one line naming nft when it is missing, changing no rule', { skip }, async () => {
    const before = await nftRuleset(pair.appNs);
    const empty = await mkdtemp(join(tmpdir(), 'pa-no-nft-'));
    cleanup.defer(() => rm(empty, { recursive: true, force: true }));
    const result = await runIptables(pair.appNs, ['--native-nftables', '-b', '80'], { path: empty });
    assert.equal(result.exitCode, 2, result.stderr);
    assert.equal(result.stderr, 'pilot-agent: nft: not found or does not run; --native-nftables writes the capture with it (install nftables)');
    assert.equal(await nftRuleset(pair.appNs), before);
  });

  it('removes its tables again when the routes after them cannot be set (TPROXY, no ip on the PATH)', { skip }, async () => {
    const fresh = await makePodPair(cleanup, 'nftrt', { v4: true, v6: false });
    const before = await nftRuleset(fresh.appNs);
    const bin = await mkdtemp(join(tmpdir(), 'pa-only-nft-'));
    cleanup.defer(() => rm(bin, { recursive: true, force: true }));
    await symlink((await execa('sh', ['-c', 'command -v nft'])).stdout.trim(), join(bin, 'nft'));
    const result = await runIptables(fresh.appNs, ['--native-nftables', '-u', String(proxyUid), '-m', 'TPROXY', '-b', '80'], { path: bin });
    assert.equal(result.exitCode, 1, result.stderr);
    assert.match(result.stderr, /^pilot-agent: ip -4 rule del fwmark 1337 lookup 133 failed: /);
    assert.equal(await nftRuleset(fresh.appNs), before, 'no table left capturing into routes that are not there');
  });

  it('leaves no half-applied rule set when nft refuses the transaction', { skip }, async () => {
    const before = await nftRuleset(pair.appNs);
    // A group name nft cannot resolve fails the transaction after the tables were deleted in it.
    const result = await runIptables(pair.appNs, ['--native-nftables', '-b', '80'], { env: { ISTIO_OUTBOUND_OWNER_GROUPS: 'no-such-group-pa' } });
    assert.equal(result.exitCode, 1, result.stderr);
    assert.match(result.stderr, /nft -f - failed: /);
    assert.equal(await nftRuleset(pair.appNs), before, 'all or nothing');
    assert.equal((await execa('ip', ['netns', 'exec', pair.appNs, 'nft', 'list', 'tables'])).stdout.includes('istio-proxy-nat'), true);
  });
});
