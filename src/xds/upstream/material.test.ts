import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { getCACertificates } from 'node:tls';
import { makeCa, type TestCa } from '../../../test/support/certs.ts';
import type { HeldCertificate } from './credentials.ts';
import { loadMaterial, type UpstreamOptions } from './material.ts';

const now = 1_800_000_000_000;
let dir: string;
let ca: TestCa;
let held: HeldCertificate;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'upstream-material-'));
  ca = await makeCa();
  const pair = await ca.issue('workload', 'spiffe://cluster.local/ns/default/sa/app');
  held = { chain: Buffer.from(pair.cert), key: Buffer.from(pair.key), expiresAt: now + 60_000 };
  await Promise.all([writeFile(join(dir, 'root.pem'), ca.cert), writeFile(join(dir, 'token'), 'the-token\n')]);
});

after(async () => {
  await ca?.close();
  await rm(dir, { recursive: true, force: true });
});

const tls = (token: string, certificate: HeldCertificate | undefined): UpstreamOptions => ({
  address: { host: '127.0.0.1', port: 15012 },
  policy: 'TLS',
  certDir: join(dir, 'certs'),
  rootCaFile: join(dir, 'root.pem'),
  tokenFile: join(dir, token),
  heldCertificate: () => certificate,
});

test('what a TLS connection to istiod carries: the token, and the held certificate while it is valid', async () => {
  const rows: [
    name: string,
    token: string,
    certificate: () => HeldCertificate | undefined,
    credential: string,
    sendsToken: boolean,
    sendsCertificate: boolean,
  ][] = [
    ['no certificate yet', 'token', () => undefined, 'token', true, false],
    ['a certificate held', 'token', () => held, 'certificate+token', true, true],
    ['the held certificate expired', 'token', () => ({ ...held, expiresAt: now }), 'token', true, false],
    ['a certificate held, the token unreadable', 'absent-token', () => held, 'certificate', false, true],
  ];
  for (const [name, token, certificate, credential, sendsToken, sendsCertificate] of rows) {
    const material = await loadMaterial(tls(token, certificate()), now);
    assert.equal(material.credential, credential, name);
    assert.equal(material.headers.authorization === 'Bearer the-token', sendsToken, name);
    assert.equal(material.tls?.cert === held.chain && material.tls.key === held.key, sendsCertificate, name);
    assert.equal(material.tokenProblem !== undefined, !sendsToken, name);
  }
});

test('without a certificate to speak for us, an unreadable token is still the error naming the flag', async () => {
  await assert.rejects(loadMaterial(tls('absent-token', undefined), now), /--xdsTokenFile.*absent-token/);
});

test('--xdsRootCa SYSTEM trusts the operating system\'s store, not a file', async () => {
  const material = await loadMaterial({ ...tls('token', undefined), rootCaFile: 'SYSTEM' }, now);
  const roots = material.tls?.ca;
  assert.ok(Array.isArray(roots) && roots.length > 0, 'the system store\'s certificates');
  assert.deepEqual(roots, getCACertificates('system'));
});
