/**
 * `pilot-agent istio-iptables` applied for real inside network namespaces
 * (see test/support/iptables-pods.ts), checked two ways: the rules iptables-save
 * shows (golden, for the injection template's arguments), and where real
 * TCP connections land.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { execa } from 'execa';
import { assertBundleFresh } from '../support/bundle-fresh.ts';
import { suiteCleanup } from '../support/cleanup.ts';
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
  type PodPair,
} from '../support/iptables-pods.ts';

const reason = await iptablesSkipReason();
// Each test is skipped on its own (not the suite), so the runner counts and prints the skips.
const skip = reason ?? false;

/** Ports an app of the pod listens on: SSH, HTTP, databases, anything. */
const appPorts = [22, 80, 443, 3306, 5432, 8080, 9090];
/** Listeners of the "proxy" side: both capture ports and the agent's excluded readiness port. */
const proxyPorts = [15001, 15006, 15021];

/** The golden: iptables-save of the nat table after the template's default arguments. */
const templateNat = `*nat
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
-A ISTIO_OUTPUT -s 127.0.0.6/32 -o lo -j RETURN
-A ISTIO_OUTPUT ! -d 127.0.0.1/32 -o lo -p tcp -m tcp ! --dport 15008 -m owner --uid-owner 1337 -j ISTIO_IN_REDIRECT
-A ISTIO_OUTPUT -o lo -m owner ! --uid-owner 1337 -j RETURN
-A ISTIO_OUTPUT -m owner --uid-owner 1337 -j RETURN
-A ISTIO_OUTPUT ! -d 127.0.0.1/32 -o lo -p tcp -m tcp ! --dport 15008 -m owner --gid-owner 1337 -j ISTIO_IN_REDIRECT
-A ISTIO_OUTPUT -o lo -m owner ! --gid-owner 1337 -j RETURN
-A ISTIO_OUTPUT -m owner --gid-owner 1337 -j RETURN
-A ISTIO_OUTPUT -d 127.0.0.1/32 -j RETURN
-A ISTIO_OUTPUT -j ISTIO_REDIRECT
-A ISTIO_REDIRECT -p tcp -j REDIRECT --to-ports 15001
COMMIT`;

describe('istio-iptables in an IPv4 pod, with the injection template\'s arguments', { timeout: 120_000 }, () => {
  const cleanup = suiteCleanup();
  let pair: PodPair;

  it('sets up', { skip }, async () => {
    assertBundleFresh();
    pair = await makePodPair(cleanup, 'v4', { v4: true, v6: false });
    const result = await runIptables(pair.appNs, templateArgs);
    assert.equal(result.exitCode, 0, result.stderr);
    await startListener(cleanup, pair, pair.appNs, 'app', [...proxyPorts, ...appPorts], false);
    await startListener(cleanup, pair, pair.peerNs, 'peer', [8080], false);
  });

  it('writes the rules iptables-save shows in the golden (no SSH exemption, tunnel port returned)', { skip }, async () => {
    assert.equal(await savedRules(pair.appNs, 'v4', 'nat'), templateNat);
  });

  it('sends a plaintext connection to every port of the pod, 22 included, to the inbound capture port, never to the app', { skip }, async () => {
    const answers = await connectAll(pair, pair.peerNs, v4.app, [...appPorts, 7777]);
    for (const port of [...appPorts, 7777]) assert.equal(answers.get(port), `app 15006 ${hostPort(v4.app, port)}`, `port ${port}`);
  });

  it('does not capture an excluded inbound port (-d)', { skip }, async () => {
    assert.match(await connectOne(pair, pair.peerNs, v4.app, 15021), /^app 15021 /);
  });

  it("sends the app's outbound connection to the outbound capture port 15001", { skip }, async () => {
    assert.equal(await connectOne(pair, pair.appNs, v4.peer, 8080), `app 15001 ${v4.peer}:8080`);
  });

  it('lets the proxy (UID 1337) reach the outside directly', { skip }, async () => {
    assert.match(await connectOne(pair, pair.appNs, v4.peer, 8080, proxyUid), /^peer 8080 /);
  });

  it("sends the proxy's call to the pod's own IP over loopback to the inbound port, except the tunnel port", { skip }, async () => {
    assert.equal(await connectOne(pair, pair.appNs, v4.app, 8080, proxyUid), `app 15006 ${v4.app}:8080`);
    assert.equal(await connectOne(pair, pair.appNs, v4.app, 15008, proxyUid), 'refused', 'nothing listens on 15008 and nothing redirects it');
  });

  it('does not capture the app calling localhost', { skip }, async () => {
    assert.match(await connectOne(pair, pair.appNs, '127.0.0.1', 8080), /^app 8080 /);
  });

  it('refuses bad flags with exit code 2 and one line, changing no rule', { skip }, async () => {
    const before = await savedRules(pair.appNs, 'v4');
    for (const [args, env, line] of [
      [['-p', '15001', '-b', '8080', '-d', '8080'], {}, 'pilot-agent: -d: port 8080 is also in the captured inbound ports (-b)'],
      [
        ['--native-nftables', '--force-iptables-binary=nft'],
        {},
        'pilot-agent: --force-iptables-binary: chooses an iptables binary, but --native-nftables writes no iptables rule; give one or the other',
      ],
      [[], { ISTIO_INBOUND_PORTS: '22,x' }, 'pilot-agent: env ISTIO_INBOUND_PORTS: port "x" is not an integer from 1 to 65535'],
    ] as const) {
      const result = await runIptables(pair.appNs, [...args], { env: { ...env } });
      assert.equal(result.exitCode, 2, result.stderr);
      assert.equal(result.stderr, line, 'one line (execa strips the final newline)');
    }
    assert.equal(await savedRules(pair.appNs, 'v4'), before, 'the rules are unchanged');
  });

  describe('a rerun over the template\'s rules', { skip }, () => {
    const other = ['-p', '15001', '-z', '15006', '-u', String(proxyUid), '-b', '8080', '-i', '198.18.0.0/16'];
    let templateRules: string;
    before(async () => {
      templateRules = await savedRules(pair.appNs, 'v4');
    });

    it('with the same flags keeps the rules in place', { skip }, async () => {
      const again = await runIptables(pair.appNs, templateArgs);
      assert.equal(again.exitCode, 0, again.stderr);
      assert.match(again.stderr, /IPv4 rules: in-place/);
      assert.equal(await savedRules(pair.appNs, 'v4'), templateRules);
    });

    it('with other flags is refused without --reconcile, stacking nothing', { skip }, async () => {
      const refused = await runIptables(pair.appNs, other);
      assert.equal(refused.exitCode, 1, refused.stderr);
      assert.match(refused.stderr, /--reconcile/);
      assert.equal(await savedRules(pair.appNs, 'v4'), templateRules, 'nothing stacked');
    });

    it('with other flags and --reconcile replaces the rules without doubles', { skip }, async () => {
      const replaced = await runIptables(pair.appNs, [...other, '--reconcile']);
      assert.equal(replaced.exitCode, 0, replaced.stderr);
      const nat = await savedRules(pair.appNs, 'v4', 'nat');
      assert.equal(nat.split('\n').filter((line) => line.startsWith('-A PREROUTING')).length, 1, nat);
      assert.equal(nat.split('\n').filter((line) => line.startsWith('-A OUTPUT')).length, 1, nat);
      assert.match(nat, /-A ISTIO_OUTPUT -d 198\.18\.0\.0\/16 -j ISTIO_REDIRECT/);
      assert.match(await connectOne(pair, pair.peerNs, v4.app, 22), /^app 22 /, 'port 22 is no longer in -b');
    });

    it('with the template\'s flags and --reconcile brings the template\'s rules back exactly', { skip }, async () => {
      const back = await runIptables(pair.appNs, [...templateArgs, '--reconcile']);
      assert.equal(back.exitCode, 0, back.stderr);
      assert.equal(await savedRules(pair.appNs, 'v4'), templateRules, 'the template\'s rules again, exactly');
    });
  });
});
