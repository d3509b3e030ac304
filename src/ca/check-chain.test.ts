import assert from 'node:assert/strict';
import { test } from 'node:test';
import { asWorkloadKey, buildCert, ecKey, type BuiltCert } from '../../test/support/cert-builder.ts';
import { checkChain, clockSkewMs, type ChainCheckInput } from './check-chain.ts';

const identity = 'spiffe://cluster.local/ns/default/sa/reviews';
const now = Date.parse('2026-11-25T08:00:00Z');
const hour = 3_600_000;
const day = 24 * hour;

const root = buildCert({ subject: 'mesh-root', key: ecKey(), notBefore: now - day, notAfter: now + 365 * day, ca: true });
const intermediate = buildCert({ subject: 'istiod-intermediate', key: ecKey(), issuer: root, notBefore: now - day, notAfter: now + 30 * day, ca: true });
const otherRoot = buildCert({ subject: 'mesh-root', key: ecKey(), notBefore: now - day, notAfter: now + 365 * day, ca: true });
const workloadKey = ecKey();
const leaf = (overrides: { issuer?: BuiltCert; notBefore?: number; notAfter?: number; uri?: string; ca?: boolean; key?: BuiltCert['key'] } = {}) =>
  buildCert({
    subject: '',
    key: overrides.key ?? workloadKey,
    issuer: overrides.issuer ?? root,
    notBefore: overrides.notBefore ?? now - 60_000,
    notAfter: overrides.notAfter ?? now + day,
    uri: overrides.uri ?? identity,
    ca: overrides.ca,
  });
const good = leaf();
const check = (chain: string[], extra: Partial<ChainCheckInput> = {}) =>
  checkChain({ chain, spki: asWorkloadKey(workloadKey).spki, identity, now, trustedRoots: root.pem, ...extra });

test('a leaf for our key and identity, signed by the trusted root, is taken and re-encoded', () => {
  const checked = check([good.pem, root.pem]);
  assert.ok(typeof checked !== 'string', String(checked));
  assert.deepEqual(checked.pems, [good.pem, root.pem]);
  assert.deepEqual(checked.uris, [identity]);
  const viaIntermediate = check([leaf({ issuer: intermediate }).pem, intermediate.pem, root.pem]);
  assert.ok(typeof viaIntermediate !== 'string', String(viaIntermediate));
  const bundled = check([leaf({ issuer: intermediate }).pem, intermediate.pem + root.pem]);
  assert.ok(typeof bundled !== 'string', `an element may hold several certificates: ${String(bundled)}`);
  assert.equal(typeof check([good.pem, root.pem], { trustedRoots: undefined }), 'object', 'no root configured: no anchor check');
  assert.equal(typeof check([good.pem, root.pem], { trustedRoots: otherRoot.pem + root.pem }), 'object', 'a bundle of roots, as during a root rotation');
  assert.equal(
    typeof check([leaf({ issuer: intermediate }).pem, intermediate.pem], { trustedRoots: root.pem }),
    'object',
    'a chain ending below the trusted root, signed by it',
  );
  assert.equal(typeof check([leaf({ notBefore: now + clockSkewMs - 1000 }).pem, root.pem]), 'object', 'a CA clock a little ahead');
});

test('every refusal, with its reason', () => {
  const rsaKey = buildCert({ subject: 'x', key: ecKey(), notBefore: 0, notAfter: now + day }).key;
  const privateKeyPem = rsaKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  const cases: [string, string[], RegExp, Partial<ChainCheckInput>?][] = [
    ['a leaf alone', [good.pem], /1 chain element\(s\); a leaf and a root are needed/],
    ['a non-certificate element after a valid leaf', [good.pem, 'not a certificate'], /chain element 1 holds no PEM certificate/],
    ['a private key block in the chain', [good.pem, privateKeyPem], /chain element 1 holds a PRIVATE KEY block, not a certificate/],
    ['a key block beside the root', [good.pem, root.pem + privateKeyPem], /chain element 1 holds a PRIVATE KEY block/],
    ['text around a block', [good.pem, `hello\n${root.pem}`], /chain element 1 holds text outside its PEM blocks/],
    [
      'a CERTIFICATE block that is not DER',
      [good.pem, '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n'],
      /chain element 1 holds a certificate that does not parse/,
    ],
    ['an empty leaf element', ['', root.pem], /chain element 0 holds no PEM certificate/],
    ['a leaf for another key', [leaf({ key: ecKey() }).pem, root.pem], /not for the key the CSR carried/],
    [
      'a leaf for another identity',
      [leaf({ uri: 'spiffe://cluster.local/ns/default/sa/other' }).pem, root.pem],
      /names spiffe:\/\/cluster\.local\/ns\/default\/sa\/other, not/,
    ],
    ['an expired leaf', [leaf({ notBefore: now - 2 * day, notAfter: now - hour }).pem, root.pem], /the leaf expired at 2026-11-25T07:00:00\.000Z/],
    ['a leaf expiring this very moment', [leaf({ notAfter: now }).pem, root.pem], /the leaf expired at/],
    ['a leaf not yet valid', [leaf({ notBefore: now + hour }).pem, root.pem], /the leaf is not valid before 2026-11-25T09:00:00\.000Z/],
    ['a leaf that is a CA', [leaf({ ca: true }).pem, root.pem], /the leaf is a CA certificate/],
    [
      'a leaf not signed by the root sent with it',
      [leaf({ issuer: otherRoot }).pem, root.pem],
      /chain certificate 0 \(no subject\) is not signed by the next one \(CN=mesh-root\)/,
    ],
    ['the leaf as its own root', [good.pem, good.pem], /names the leaf itself as its root/],
    ['the leaf as an intermediate', [good.pem, good.pem, root.pem], /names the leaf itself as its issuer/],
    [
      'an intermediate that is not a CA',
      [leaf({ issuer: leaf({ uri: 'spiffe://x/y' }) }).pem, leaf({ uri: 'spiffe://x/y' }).pem, root.pem],
      /chain certificate 1 \(no subject\) is not a CA/,
    ],
    [
      'a root other than the trusted one',
      [leaf({ issuer: otherRoot }).pem, otherRoot.pem],
      /the chain's root \(CN=mesh-root, SHA-256 .*\) is not a root this agent trusts/,
    ],
    ['a trusted root file with no certificate in it', [good.pem, root.pem], /is not a root this agent trusts/, { trustedRoots: 'garbage' }],
  ];
  for (const [name, chain, reason, extra] of cases) {
    const got = check(chain, extra);
    assert.equal(typeof got, 'string', `${name}: taken`);
    assert.match(got as string, reason, name);
  }
});

test('a chain too long to be a CA\'s is refused before its signatures are checked', () => {
  assert.match(check([good.pem, ...Array.from({ length: 20 }, () => root.pem)]) as string, /more than 16 certificates/);
});
