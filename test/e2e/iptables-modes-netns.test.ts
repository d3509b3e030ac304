/**
 * The other modes of `pilot-agent istio-iptables`, in real namespaces:
 * Istio CNI's validation (exit 126 when connections are not redirected),
 * --cleanup-only, DNS capture (UDP and TCP 53 to the agent's 15053, the
 * proxy's own queries straight out) and TPROXY. See test/support/iptables-pods.ts.
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
import { iptablesSkipReason, makePodPair, proxyUid, runIptables, savedRules, templateArgs, v4, type PodPair } from '../support/iptables-pods.ts';

const reason = await iptablesSkipReason();
const skip = reason ?? false;

describe('istio-iptables --run-validation (the istio-validation container of Istio CNI) and --cleanup-only', { timeout: 120_000 }, () => {
  const cleanup = suiteCleanup();
  let pair: PodPair;
  const validate = (timeout: string) => runIptables(pair.appNs, ['--run-validation', '--skip-rule-apply', '--probe-timeout', timeout], { uid: proxyUid });

  it('passes, as the proxy user, once the rules redirect', { skip }, async () => {
    assertBundleFresh();
    pair = await makePodPair(cleanup, 'valid', { v4: true, v6: false });
    const applied = await runIptables(pair.appNs, templateArgs);
    assert.equal(applied.exitCode, 0, applied.stderr);
    const result = await validate('5s');
    assert.equal(result.exitCode, 0, result.stderr);
    assert.match(result.stderr, /validation passed/);
  });

  it('--cleanup-only removes every rule and chain it added', { skip }, async () => {
    const result = await runIptables(pair.appNs, [...templateArgs, '--cleanup-only']);
    assert.equal(result.exitCode, 0, result.stderr);
    const saved = await savedRules(pair.appNs, 'v4');
    assert.doesNotMatch(saved, /ISTIO|^-A /m, saved);
  });

  it('fails with exit code 126 and one line saying why when nothing redirects', { skip }, async () => {
    const result = await validate('1s');
    assert.equal(result.exitCode, 126, result.stderr);
    assert.match(result.stderr, /^pilot-agent istio-iptables: validation failed: .*127\.0\.0\.6:15002.*not ready/m);
  });
});

describe('istio-iptables --redirect-dns: the app\'s DNS to the agent on 15053, never the proxy\'s own', { timeout: 120_000 }, () => {
  const cleanup = suiteCleanup();
  let pair: PodPair;

  it('with --capture-all-dns, redirects UDP and TCP 53 to every server', { skip }, async () => {
    assertBundleFresh();
    pair = await makePodPair(cleanup, 'dns', { v4: true, v6: false });
    const applied = await runIptables(pair.appNs, [...templateArgs, '--redirect-dns', '--capture-all-dns']);
    assert.equal(applied.exitCode, 0, applied.stderr);
    await assertAllDnsCaptured(cleanup, pair);
  });

  it('without it, only the servers of /etc/resolv.conf (ISTIO_META_DNS_CAPTURE=true)', { skip }, async () => {
    await resolvConfAtPeer(cleanup, pair);
    const applied = await runIptables(pair.appNs, [...templateArgs, '--reconcile'], { env: { ISTIO_META_DNS_CAPTURE: 'true' } });
    assert.equal(applied.exitCode, 0, applied.stderr);
    assert.match(
      await savedRules(pair.appNs, 'v4', 'nat'),
      new RegExp(`-A ISTIO_OUTPUT_DNS -d ${v4.peer}/32 -p udp -m udp --dport 53 -j REDIRECT --to-ports 15053`),
    );
    await assertResolvConfDnsCaptured(pair);
  });
});

describe('istio-iptables -m TPROXY', { skip, timeout: 120_000 }, () => {
  const cleanup = suiteCleanup();
  let pair: PodPair;
  const args = tproxyArgs();
  let first: Awaited<ReturnType<typeof runIptables>>;

  before(async () => {
    assertBundleFresh();
    pair = await makePodPair(cleanup, 'tproxy', { v4: true, v6: false });
    first = await runIptables(pair.appNs, args);
  });

  it('writes the mangle rules and routes marked packets to loopback', async () => {
    assert.equal(first.exitCode, 0, `round 1: ${first.stderr}`);
    const mangle = await savedRules(pair.appNs, 'v4', 'mangle');
    assert.match(mangle, /-A ISTIO_TPROXY ! -d 127\.0\.0\.1\/32 -p tcp -j TPROXY --on-port 15006 --on-ip 0\.0\.0\.0 --tproxy-mark 0x539\/0xffffffff/);
    assert.match(mangle, /-A PREROUTING -p tcp -j ISTIO_INBOUND/);
    await assertTproxyRoute(pair.appNs);
  });

  it('a rerun keeps the fwmark routing rule single', async () => {
    const result = await runIptables(pair.appNs, args);
    assert.equal(result.exitCode, 0, `round 2: ${result.stderr}`);
    await assertSingleFwmarkRule(pair.appNs);
  });

  it('hands an inbound connection to the transparent listener on 15006 with its original address', async () => {
    await assertTransparentHandoff(cleanup, pair);
  });
});
