import assert from 'node:assert/strict';
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { after, before, test } from 'node:test';
import { asWorkloadKey, buildCert, ecKey } from '../../test/support/cert-builder.ts';
import { issueServerPair, makeCsrSigner, type CsrSigner } from '../../test/support/csr-signer.ts';
import { buildCsr, generateWorkloadKey, type WorkloadKey } from './csr.ts';
import { checkIssued } from './workload-certificates.ts';

/** checkIssued on its own: what of the CA's answer is refused, and what an accepted one carries. */
const identity = 'spiffe://cluster.local/ns/default/sa/reviews';
let signer: CsrSigner;
before(async () => (signer = await makeCsrSigner()));
after(() => signer.close());

/** The options the agent passes: now is the real clock (the test CA signs with it), the test root is trusted. */
const check = (chain: string[], key: WorkloadKey) => checkIssued({ chain, key, identity, now: Date.now(), trustedRoots: signer.root });

/** Our key and a leaf the test CA signed for it; `san` is openssl's subjectAltName value after `URI:`. */
async function issued(san = identity, pkcs8 = false) {
  const key = await generateWorkloadKey({ algorithm: 'ECDSA', pkcs8 });
  const leaf = await signer.sign(buildCsr({ key, uri: identity, organization: 'cluster.local' }), { uri: san });
  return { key, leaf };
}

test('an accepted certificate carries the chain, our key, serial, issuer, SANs, validity and the last certificate as root', async () => {
  const { key, leaf } = await issued(identity, true);
  const result = check([leaf, signer.root], key);
  assert.ok(typeof result !== 'string', String(result));
  const cert = new X509Certificate(leaf);
  assert.deepEqual(result.chain, [leaf, signer.root]);
  assert.equal(result.root, signer.root);
  assert.equal(result.key, key.pem, 'our key, as generated');
  assert.equal(result.serial, cert.serialNumber.toUpperCase());
  assert.match(result.serial, /^[0-9A-F]+$/);
  assert.equal(result.issuer, 'O=cluster.local, CN=test-root');
  assert.deepEqual(result.san, [identity]);
  assert.equal(result.issuedAt, Date.parse(cert.validFrom));
  assert.equal(result.expiresAt, Date.parse(cert.validTo));
});

test('through an intermediate, the root is the last of three certificates, not the second', () => {
  // The chain checks now want every certificate after the leaf to be a CA: openssl's
  // one-level test CA cannot make one, the in-memory builder can.
  const now = Date.now();
  const [day, key] = [86_400_000, ecKey()];
  const root = buildCert({ subject: 'mesh-root', key: ecKey(), notBefore: now - day, notAfter: now + day, ca: true });
  const middle = buildCert({ subject: 'istiod-intermediate', key: ecKey(), issuer: root, notBefore: now - day, notAfter: now + day, ca: true });
  const leaf = buildCert({ subject: '', key, issuer: middle, notBefore: now - day, notAfter: now + day, uri: identity });
  const result = checkIssued({ chain: [leaf.pem, middle.pem, root.pem], key: asWorkloadKey(key), identity, now, trustedRoots: root.pem });
  assert.ok(typeof result !== 'string', String(result));
  assert.deepEqual(result.chain, [leaf.pem, middle.pem, root.pem]);
  assert.equal(result.root, root.pem);
  assert.equal(result.issuer, 'CN=istiod-intermediate');
});

test('only URI SANs count as identities: a DNS SAN beside ours is not one', async () => {
  const { key, leaf } = await issued(`${identity},DNS:reviews.default.svc`);
  const result = check([leaf, signer.root], key);
  assert.ok(typeof result !== 'string', String(result));
  assert.deepEqual(result.san, [identity]);
});

test('what the CA sent wrong is named', async () => {
  const { key, leaf } = await issued();
  const others = await issued(`spiffe://cluster.local/ns/a/sa/one,URI:spiffe://cluster.local/ns/b/sa/two`);
  const dnsOnly = await issueServerPair(signer, 'reviews.default.svc');
  const dnsKey = asWorkloadKey(createPrivateKey(await readFile(dnsOnly.key)));
  const cases: [string[], typeof key, RegExp][] = [
    [[], key, /^the CA sent 0 chain element\(s\); a leaf and a root are needed$/],
    [[leaf], key, /^the CA sent 1 chain element\(s\); a leaf and a root are needed$/],
    [['not a certificate', signer.root], key, /^chain element 0 holds no PEM certificate$/],
    [
      [others.leaf, signer.root],
      others.key,
      /^the leaf names spiffe:\/\/cluster\.local\/ns\/a\/sa\/one, spiffe:\/\/cluster\.local\/ns\/b\/sa\/two, not spiffe:/,
    ],
    [[await readFile(dnsOnly.cert, 'utf8'), signer.root], dnsKey, /^the leaf names no URI, not spiffe:\/\/cluster\.local\/ns\/default\/sa\/reviews$/],
  ];
  for (const [chain, caseKey, message] of cases) {
    const result = check(chain, caseKey);
    assert.equal(typeof result, 'string', `accepted: ${message}`);
    assert.match(result as string, message);
  }
});
