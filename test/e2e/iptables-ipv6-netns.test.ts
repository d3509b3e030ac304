/**
 * IPv6 capture (issue 29): Istio's behaviour for an IPv6-only pod and for a
 * dual-stack pod with ISTIO_DUAL_STACK, and ours beyond Istio for a
 * dual-stack pod without it (new inbound IPv6 reset on every port IPv4
 * captures). Real namespaces, real ip6tables; see test/support/iptables-pods.ts.
 */
import assert from 'node:assert/strict';
import { symlink } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { execa } from 'execa';
import { assertBundleFresh } from '../support/bundle-fresh.ts';
import { suiteCleanup, tempDir } from '../support/cleanup.ts';
import {
  connectAll,
  connectOne,
  hostPort,
  iptablesSkipReason,
  makePodPair,
  proxyUid,
  runIptables,
  savedRules,
  startListener,
  templateArgs,
  v4,
  v6,
  type PodPair,
} from '../support/iptables-pods.ts';

const reason = await iptablesSkipReason();
const skip = reason ?? false;

const appPorts = [22, 80, 443, 3306, 8080, 9090];
const proxyPorts = [15001, 15006, 15021];

/** Every app port, and one nobody listens on, lands on 15006 with its original destination. */
async function assertEveryPortCaptured(pair: PodPair, address: string): Promise<void> {
  const ports = [...appPorts, 7777];
  const answers = await connectAll(pair, pair.peerNs, address, ports);
  assert.deepEqual(ports.map((port) => answers.get(port)), ports.map((port) => `app 15006 ${hostPort(address, port)}`));
}

/** The golden: ip6tables-save of the nat table after the template's arguments, IPv6 captured. */
const templateNat6 = `*nat
:PREROUTING ACCEPT
:INPUT ACCEPT
:OUTPUT ACCEPT
:POSTROUTING ACCEPT
:ISTIO_INBOUND -
:ISTIO_IN_REDIRECT -
:ISTIO_OUTPUT -
:ISTIO_REDIRECT -
-A PREROUTING -p tcp -j ISTIO_INBOUND
-A OUTPUT -j ISTIO_OUTPUT
-A ISTIO_INBOUND -p tcp -m tcp --dport 15008 -j RETURN
-A ISTIO_INBOUND -p tcp -m tcp --dport 15090 -j RETURN
-A ISTIO_INBOUND -p tcp -m tcp --dport 15021 -j RETURN
-A ISTIO_INBOUND -p tcp -m tcp --dport 15020 -j RETURN
-A ISTIO_INBOUND -p tcp -j ISTIO_IN_REDIRECT
-A ISTIO_IN_REDIRECT -p tcp -j REDIRECT --to-ports 15006
-A ISTIO_OUTPUT -s ::6/128 -o lo -j RETURN
-A ISTIO_OUTPUT ! -d ::1/128 -o lo -p tcp -m tcp ! --dport 15008 -m owner --uid-owner 1337 -j ISTIO_IN_REDIRECT
-A ISTIO_OUTPUT -o lo -m owner ! --uid-owner 1337 -j RETURN
-A ISTIO_OUTPUT -m owner --uid-owner 1337 -j RETURN
-A ISTIO_OUTPUT ! -d ::1/128 -o lo -p tcp -m tcp ! --dport 15008 -m owner --gid-owner 1337 -j ISTIO_IN_REDIRECT
-A ISTIO_OUTPUT -o lo -m owner ! --gid-owner 1337 -j RETURN
-A ISTIO_OUTPUT -m owner --gid-owner 1337 -j RETURN
-A ISTIO_OUTPUT -d ::1/128 -j RETURN
-A ISTIO_OUTPUT -j ISTIO_REDIRECT
-A ISTIO_REDIRECT -p tcp -j REDIRECT --to-ports 15001
COMMIT`;

/** The golden: ip6tables-save of the filter table for a dual-stack pod without dual stack. */
const rejectFilter6 = `*filter
:INPUT ACCEPT
:FORWARD ACCEPT
:OUTPUT ACCEPT
:ISTIO_INBOUND_REJECT -
-A INPUT -p tcp -j ISTIO_INBOUND_REJECT
-A ISTIO_INBOUND_REJECT -i lo -j RETURN
-A ISTIO_INBOUND_REJECT -p tcp -m tcp --dport 15008 -j RETURN
-A ISTIO_INBOUND_REJECT -p tcp -m tcp --dport 15090 -j RETURN
-A ISTIO_INBOUND_REJECT -p tcp -m tcp --dport 15021 -j RETURN
-A ISTIO_INBOUND_REJECT -p tcp -m tcp --dport 15020 -j RETURN
-A ISTIO_INBOUND_REJECT -p tcp -m tcp --tcp-flags FIN,SYN,RST,ACK SYN -j REJECT --reject-with tcp-reset
COMMIT`;

for (const variant of [
  { label: 'v6only', name: 'an IPv6-only pod (Istio: IPv6 rules)', families: { v4: false, v6: true }, env: {} as Record<string, string> },
  {
    label: 'dual',
    name: 'a dual-stack pod with ISTIO_DUAL_STACK=true (Istio: IPv6 rules)',
    families: { v4: true, v6: true },
    env: { ISTIO_DUAL_STACK: 'true' },
  },
]) {
  describe(`istio-iptables in ${variant.name}`, { timeout: 120_000 }, () => {
    const cleanup = suiteCleanup();
    let pair: PodPair;
    let stderr = '';

    it('sets up', { skip }, async () => {
      assertBundleFresh();
      pair = await makePodPair(cleanup, variant.label, variant.families);
      const result = await runIptables(pair.appNs, templateArgs, { env: variant.env });
      assert.equal(result.exitCode, 0, result.stderr);
      stderr = result.stderr;
      await startListener(cleanup, pair, pair.appNs, 'app', [...proxyPorts, ...appPorts], true);
      await startListener(cleanup, pair, pair.peerNs, 'peer', [8080], true);
    });

    it('writes the IPv6 rules iptables-save shows in the golden, and ::6 on loopback', { skip }, async () => {
      assert.match(stderr, /IPv6 rules \(capture\): applied/);
      assert.equal(await savedRules(pair.appNs, 'v6', 'nat'), templateNat6);
      const { stdout } = await execa('ip', ['-n', pair.appNs, '-6', 'addr', 'show', 'dev', 'lo']);
      assert.match(stdout, /inet6 ::6\/128/);
    });

    it('captures every TCP port over IPv6, 22 included, as over IPv4', { skip }, async () => {
      await assertEveryPortCaptured(pair, v6.app);
      if (variant.families.v4) await assertEveryPortCaptured(pair, v4.app);
    });

    it('leaves the excluded port (-d) alone over IPv6', { skip }, async () => {
      assert.match(await connectOne(pair, pair.peerNs, v6.app, 15021), /^app 15021 /);
    });

    it("sends the app's outbound IPv6 to 15001, and lets the proxy's reach the outside", { skip }, async () => {
      assert.equal(await connectOne(pair, pair.appNs, v6.peer, 8080), `app 15001 [${v6.peer}]:8080`);
      assert.match(await connectOne(pair, pair.appNs, v6.peer, 8080, proxyUid), /^peer 8080 /);
    });

    if (!variant.families.v4) {
      it('passes the validation over ::1 and ::6, as Istio does for an IPv6 pod', { skip }, async () => {
        // Our listeners hold 15001 and 15006 on every address; the validation gets its own pair of ports.
        const result = await runIptables(pair.appNs, ['-p', '16001', '-z', '16006', '--run-validation', '--skip-rule-apply'], { uid: proxyUid });
        assert.equal(result.exitCode, 126, 'nothing redirects to 16001/16006 here');
        const applied = await runIptables(pair.appNs, ['-p', '16001', '-z', '16006', '-u', String(proxyUid), '-b', '*', '-i', '*', '--reconcile']);
        assert.equal(applied.exitCode, 0, applied.stderr);
        const validated = await runIptables(pair.appNs, ['-p', '16001', '-z', '16006', '--run-validation', '--skip-rule-apply'], { uid: proxyUid });
        assert.equal(validated.exitCode, 0, validated.stderr);
        assert.match(validated.stderr, /validation passed/);
      });
    }
  });
}

describe('istio-iptables in a dual-stack pod without ISTIO_DUAL_STACK (beyond Istio: inbound IPv6 reset)', { timeout: 120_000 }, () => {
  const cleanup = suiteCleanup();
  let pair: PodPair;
  let stderr = '';

  it('sets up, refusing first with exit 2 when ip6tables is missing', { skip }, async () => {
    assertBundleFresh();
    pair = await makePodPair(cleanup, 'reject', { v4: true, v6: true });
    // A PATH with the IPv4 tools only.
    const bin = await tempDir(cleanup, 'pa-ipt-path-');
    for (const tool of ['iptables', 'iptables-save', 'iptables-restore']) {
      await symlink((await execa('sh', ['-c', `command -v ${tool}`])).stdout.trim(), join(bin, tool));
    }
    const missing = await runIptables(pair.appNs, templateArgs, { path: bin });
    assert.equal(missing.exitCode, 2, missing.stderr);
    assert.match(
      missing.stderr.split('\n').at(-1)!,
      /^pilot-agent: ip6tables-restore: not found or does not run; the pod's IPv6 address 2001:2:0:251::1 needs IPv6 rules \(install ip6tables\)$/,
    );
    assert.doesNotMatch(await savedRules(pair.appNs, 'v4'), /ISTIO/, 'nothing applied');

    const result = await runIptables(pair.appNs, templateArgs);
    assert.equal(result.exitCode, 0, result.stderr);
    stderr = result.stderr;
    await startListener(cleanup, pair, pair.appNs, 'app', [...proxyPorts, ...appPorts], true);
    await startListener(cleanup, pair, pair.peerNs, 'peer', [8080], true);
  });

  it('says why in one line, and writes the reject rules iptables-save shows in the golden', { skip }, async () => {
    const lines = stderr.split('\n').filter((line) => /IPv6/.test(line) && /dual stack/.test(line));
    assert.equal(lines.length, 1, stderr);
    assert.match(lines[0]!, /2001:2:0:251::1 .*ISTIO_DUAL_STACK.*reset/);
    assert.equal(await savedRules(pair.appNs, 'v6', 'filter'), rejectFilter6);
    assert.doesNotMatch(await savedRules(pair.appNs, 'v6', 'nat'), /ISTIO/, 'no IPv6 capture, as Istio');
  });

  it('resets a plaintext IPv6 connection to every port IPv4 captures, 22 included', { skip }, async () => {
    const ports = [...appPorts, 7777];
    const answers = await connectAll(pair, pair.peerNs, v6.app, ports);
    assert.deepEqual(ports.map((port) => answers.get(port)), ports.map(() => 'refused'));
  });

  it('still captures every port over IPv4', { skip }, async () => {
    await assertEveryPortCaptured(pair, v4.app);
  });

  it('leaves the excluded port (-d) reachable over IPv6', { skip }, async () => {
    assert.match(await connectOne(pair, pair.peerNs, v6.app, 15021), /^app 15021 /);
  });

  it("leaves the app's outbound IPv6 as Istio does: straight out, and the replies come back", { skip }, async () => {
    assert.match(await connectOne(pair, pair.appNs, v6.peer, 8080), /^peer 8080 /);
  });
});
