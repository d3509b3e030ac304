import assert from 'node:assert/strict';
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { after, before, test } from 'node:test';
import { issueServerPair, makeCsrSigner, type CsrSigner } from '../../test/support/csr-signer.ts';
import { buildCsr, generateWorkloadKey } from './csr.ts';
import { checkIssued } from './workload-certificates.ts';

/** checkIssued on its own: what of the CA's answer is refused, and what an accepted one carries. */
const identity = 'spiffe://cluster.local/ns/default/sa/reviews';
let signer: CsrSigner;
before(async () => (signer = await makeCsrSigner()));
after(() => signer.close());

/** Our key and a leaf the test CA signed for it; `san` is openssl's subjectAltName value after `URI:`. */
async function issued(san = identity) {
  const key = await generateWorkloadKey('ECDSA');
  const leaf = await signer.sign(buildCsr({ key, uri: identity, organization: 'cluster.local' }), { uri: san });
  return { key, leaf };
}

test('an accepted certificate carries the chain, our key, serial, issuer, SANs, validity and the last certificate as root', async () => {
  const { key, leaf } = await issued();
  const middle = (await readFile((await issueServerPair(signer, 'middle.example')).cert, 'utf8'));
  const result = checkIssued([leaf, middle, signer.root], key, identity);
  assert.ok(typeof result !== 'string', String(result));
  const cert = new X509Certificate(leaf);
  assert.deepEqual(result.chain, [leaf, middle, signer.root]);
  assert.equal(result.root, signer.root, 'the root is the last of three, not the second');
  assert.equal(result.key, key.export({ type: 'pkcs8', format: 'pem' }));
  assert.equal(result.serial, cert.serialNumber.toUpperCase());
  assert.match(result.serial, /^[0-9A-F]+$/);
  assert.equal(result.issuer, 'O=cluster.local, CN=test-root');
  assert.deepEqual(result.san, [identity]);
  assert.equal(result.issuedAt, Date.parse(cert.validFrom));
  assert.equal(result.expiresAt, Date.parse(cert.validTo));
});

test('only URI SANs count as identities: a DNS SAN beside ours is not one', async () => {
  const { key, leaf } = await issued(`${identity},DNS:reviews.default.svc`);
  const result = checkIssued([leaf, signer.root], key, identity);
  assert.ok(typeof result !== 'string', String(result));
  assert.deepEqual(result.san, [identity]);
});

test('what the CA sent wrong is named', async () => {
  const { key, leaf } = await issued();
  const others = await issued(`spiffe://cluster.local/ns/a/sa/one,URI:spiffe://cluster.local/ns/b/sa/two`);
  const dnsOnly = await issueServerPair(signer, 'reviews.default.svc');
  const dnsKey = createPrivateKey(await readFile(dnsOnly.key));
  const cases: [string[], typeof key, RegExp][] = [
    [[], key, /^the CA sent 0 certificate\(s\); a leaf and a root are needed$/],
    [[leaf], key, /^the CA sent 1 certificate\(s\); a leaf and a root are needed$/],
    [['not a certificate', signer.root], key, /^the CA's leaf certificate does not parse: /],
    [[others.leaf, signer.root], others.key, /^the CA's certificate names spiffe:\/\/cluster\.local\/ns\/a\/sa\/one, spiffe:\/\/cluster\.local\/ns\/b\/sa\/two, not spiffe:/],
    [[await readFile(dnsOnly.cert, 'utf8'), signer.root], dnsKey, /^the CA's certificate names no URI, not spiffe:\/\/cluster\.local\/ns\/default\/sa\/reviews$/],
  ];
  for (const [chain, caseKey, message] of cases) {
    const result = checkIssued(chain, caseKey, identity);
    assert.equal(typeof result, 'string', `accepted: ${message}`);
    assert.match(result as string, message);
  }
});
