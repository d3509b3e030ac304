import assert from 'node:assert/strict';
import { createPublicKey, KeyObject } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { execa } from 'execa';
import { buildCsr, generateWorkloadKey, type KeyAlgorithm, type WorkloadKeyOptions } from './csr.ts';

const uri = 'spiffe://cluster.local/ns/default/sa/reviews';

/** openssl is the independent judge: it checks the signature and prints the request. */
async function opensslReads(csr: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'csr-test-'));
  try {
    await writeFile(join(dir, 'req.pem'), csr);
    // openssl 3.0 exits 0 on a bad signature: the verdict is only in its output.
    const { all } = await execa('openssl', ['req', '-in', join(dir, 'req.pem'), '-noout', '-verify', '-text'], { all: true });
    assert.match(all, /self-signature verify OK/);
    return all;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

for (const [algorithm, keyText] of [['ECDSA', 'prime256v1'], ['RSA', '2048 bit']] as [KeyAlgorithm, string][]) {
  test(`a ${algorithm} request verifies and carries only the SPIFFE URI`, async () => {
    const key = await generateWorkloadKey(algorithm);
    const text = await opensslReads(buildCsr({ key, uri, organization: 'cluster.local' }));
    assert.match(text, new RegExp(keyText));
    assert.match(text, /Subject: O\s?=\s?cluster\.local/);
    assert.match(text, /X509v3 Subject Alternative Name:\s*\n\s*URI:spiffe:\/\/cluster\.local\/ns\/default\/sa\/reviews\s*\n/);
  });
}

test('a request without an organization has an empty subject and a critical SAN (RFC 5280 4.2.1.6), as Istio sends it', async () => {
  const key = await generateWorkloadKey('ECDSA');
  const text = await opensslReads(buildCsr({ key, uri }));
  assert.match(text, /Subject:\s*\n/);
  assert.match(text, /X509v3 Subject Alternative Name: critical\s*\n\s*URI:spiffe:\/\/cluster\.local\/ns\/default\/sa\/reviews\s*\n/);
  const named = await opensslReads(buildCsr({ key, uri, organization: 'cluster.local' }));
  assert.match(named, /X509v3 Subject Alternative Name:\s*\n/, 'with a subject, the SAN is not critical');
});

const keyCases: [WorkloadKeyOptions, RegExp, RegExp][] = [
  [{ algorithm: 'ECDSA', curve: 'P384' }, /secp384r1/, /ecdsa-with-SHA384/],
  [{ algorithm: 'ECDSA' }, /prime256v1/, /ecdsa-with-SHA256/],
  [{ algorithm: 'RSA', rsaBits: 3072 }, /3072 bit/, /sha256WithRSAEncryption/],
];
for (const [options, keyText, signatureText] of keyCases) {
  test(`key ${JSON.stringify(options)}: the request verifies with the key and signature asked for`, async () => {
    const text = await opensslReads(buildCsr({ key: await generateWorkloadKey(options), uri }));
    assert.match(text, keyText);
    assert.match(text, signatureText);
  });
}

test('PKCS8_KEY: PKCS#8 on request, else SEC 1 for EC and PKCS#1 for RSA, as Istio writes keys', async () => {
  const pem = async (algorithm: KeyAlgorithm, pkcs8: boolean) => (await generateWorkloadKey({ algorithm, pkcs8 })).pem;
  assert.match(await pem('ECDSA', false), /^-----BEGIN EC PRIVATE KEY-----/);
  assert.match(await pem('RSA', false), /^-----BEGIN RSA PRIVATE KEY-----/);
  assert.match(await pem('ECDSA', true), /^-----BEGIN PRIVATE KEY-----/);
  assert.match(await pem('RSA', true), /^-----BEGIN PRIVATE KEY-----/);
});

test('a workload key is bytes only, no KeyObject: its native key is freed at once, not at a far-off GC (issue 44)', async () => {
  for (const options of [{ algorithm: 'RSA' }, { algorithm: 'ECDSA', curve: 'P384' }] as WorkloadKeyOptions[]) {
    const key = await generateWorkloadKey(options);
    assert.ok(!((key as object) instanceof KeyObject), 'not a KeyObject');
    for (const [name, value] of Object.entries(key)) {
      assert.ok(typeof value === 'string' || Buffer.isBuffer(value), `${name} is a ${value?.constructor?.name}`);
    }
    assert.equal(createPublicKey(key.pem).export({ type: 'spki', format: 'der' }).toString('hex'), key.spki.toString('hex'), 'the SPKI is the key\'s');
  }
});
