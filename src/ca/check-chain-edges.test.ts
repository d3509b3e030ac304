import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { test } from 'node:test';
import { asWorkloadKey, buildCert, ecKey } from '../../test/support/cert-builder.ts';
import { checkChain, type ChainCheckInput } from './check-chain.ts';

/** The edges of check-chain.ts the mutation run found unguarded (issue 28): skew bounds, which certificate anchors, the trusted bundle's labels. */
const identity = 'spiffe://cluster.local/ns/default/sa/reviews';
const now = Date.parse('2026-11-25T08:00:00Z');
const [minute, day] = [60_000, 86_400_000];

const root = buildCert({ subject: 'mesh-root', key: ecKey(), notBefore: now - day, notAfter: now + day, ca: true });
const intermediate = buildCert({ subject: 'istiod-intermediate', key: ecKey(), issuer: root, notBefore: now - day, notAfter: now + day, ca: true });
const otherRoot = buildCert({ subject: 'other-root', key: ecKey(), notBefore: now - day, notAfter: now + day, ca: true });
const workloadKey = ecKey();
const leaf = (notBefore: number, issuer = root) => buildCert({ subject: '', key: workloadKey, issuer, notBefore, notAfter: now + day, uri: identity }).pem;
const check = (chain: string[], extra: Partial<ChainCheckInput> = {}) =>
  checkChain({ chain, spki: asWorkloadKey(workloadKey).spki, identity, now, trustedRoots: root.pem, ...extra });

test('a CA clock up to five minutes ahead is taken, to the second; past that the leaf is refused', () => {
  assert.equal(typeof check([leaf(now + 5 * minute), root.pem]), 'object', 'exactly five minutes ahead');
  assert.equal(typeof check([leaf(now + 4 * minute + 59_000), root.pem]), 'object');
  assert.match(check([leaf(now + 5 * minute + 1000), root.pem]) as string, /^the leaf is not valid before 2026-11-25T08:05:01\.000Z$/);
});

test('a refused chain names its last certificate and the start of its SHA-256, not an intermediate', () => {
  const refused = check([leaf(now - minute, intermediate), intermediate.pem, root.pem], { trustedRoots: otherRoot.pem });
  const fingerprint = new X509Certificate(root.pem).fingerprint256.slice(0, 23);
  assert.equal(refused, `the chain's root (CN=mesh-root, SHA-256 ${fingerprint}…) is not a root this agent trusts`);
});

test('a trusted certificate below the top does not anchor the chain: the untrusted top would be served as ROOTCA', () => {
  // An intermediate pinned as the trust anchor, and the CA sends the root above it too: that root would become Envoy's anchor for every peer.
  const refused = check([leaf(now - minute, intermediate), intermediate.pem, root.pem], { trustedRoots: intermediate.pem });
  const fingerprint = new X509Certificate(root.pem).fingerprint256.slice(0, 23);
  assert.equal(refused, `the chain's root (CN=mesh-root, SHA-256 ${fingerprint}…) is not a root this agent trusts`);
  // The same pinned intermediate as the top of the chain is the anchor, and what is served.
  const pinned = check([leaf(now - minute, intermediate), intermediate.pem], { trustedRoots: intermediate.pem });
  assert.ok(typeof pinned === 'object', String(pinned));
  assert.equal(pinned.pems.at(-1), intermediate.pem);
});

test('only CERTIFICATE blocks of the trusted bundle count: the same DER under another label is not trusted', () => {
  const relabelled = root.pem.replaceAll('CERTIFICATE-----', 'X509 CERTIFICATE-----');
  assert.match(check([leaf(now - minute), root.pem], { trustedRoots: relabelled }) as string, /is not a root this agent trusts$/);
  assert.equal(
    typeof check([leaf(now - minute), root.pem], { trustedRoots: relabelled + root.pem }),
    'object',
    'a real CERTIFICATE block beside it still counts',
  );
});

test('a check that throws is a refusal with its reason, never an exception', () => {
  // Comparing the leaf's key with a key that is not bytes throws: the one input here that makes a check throw.
  const refused = check([leaf(now - minute), root.pem], { spki: 'not bytes' as unknown as Buffer });
  assert.equal(typeof refused, 'string');
  assert.match(refused as string, /^the CA's answer cannot be checked: \S/);
});
