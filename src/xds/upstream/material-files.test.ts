import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { makeCa, type KeyPair, type TestCa } from '../../../test/support/certs.ts';
import { AgentError } from '../../shared/errors.ts';
import { loadMaterial, type UpstreamOptions } from './material.ts';

// The files a dial reads, as a tampered or half-mounted pod could leave them: each refusal names
// the file and the flag, as an AgentError (exit 2 at start), and none waits on a FIFO.
let dir: string;
let ca: TestCa;
let pair: KeyPair;
let other: KeyPair;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'upstream-files-'));
  ca = await makeCa();
  [pair, other] = await Promise.all([ca.issue('workload'), ca.issue('other')]);
  await writeFile(join(dir, 'token'), '  the-token \n');
});

after(async () => {
  await ca?.close();
  await rm(dir, { recursive: true, force: true });
});

/** A cert dir of its own with these files (undefined: absent; 'fifo': a FIFO). */
async function certDir(name: string, files: { chain?: string; key?: string; root?: string }): Promise<string> {
  const path = join(dir, name);
  await mkdir(path);
  const write = async (file: string, content: string | undefined) => {
    if (content === 'fifo') execFileSync('mkfifo', [join(path, file)]);
    else if (content !== undefined) await writeFile(join(path, file), content);
  };
  await Promise.all([write('cert-chain.pem', files.chain), write('key.pem', files.key), write('root-cert.pem', files.root)]);
  return path;
}

const mutual = (path: string, tokenFile?: string): UpstreamOptions => ({
  address: { host: '127.0.0.1', port: 15012 },
  policy: 'MUTUAL_TLS',
  certDir: path,
  tokenFile,
});

test('MUTUAL_TLS carries the three files of --certDir, the token beside them', async () => {
  const path = await certDir('good', { chain: pair.cert, key: pair.key, root: ca.cert });
  const material = await loadMaterial(mutual(path, join(dir, 'token')));
  assert.deepEqual(material.tls, { cert: Buffer.from(pair.cert), key: Buffer.from(pair.key), ca: Buffer.from(ca.cert) });
  assert.equal(material.headers.authorization, 'Bearer the-token');
  assert.equal(material.credential, 'certificate+token');
  assert.deepEqual(material.held, { present: false, reason: 'cert-dir' });
  assert.equal((await loadMaterial(mutual(path))).credential, 'certificate');
});

test('MUTUAL_TLS without our certificate there is TLS with the token, as Istio on a VM before its first certificate', async () => {
  const path = await certDir('root-only', { root: ca.cert });
  const material = await loadMaterial(mutual(path, join(dir, 'token')));
  assert.deepEqual(material.tls, { ca: Buffer.from(ca.cert) });
  assert.equal(material.headers.authorization, 'Bearer the-token');
  assert.equal(material.credential, 'token');
  await assert.rejects(loadMaterial(mutual(path, join(dir, 'absent-token'))), /--xdsTokenFile: cannot read .*absent-token \(ENOENT\)/);
});

test('MUTUAL_TLS refuses files it could only fail on at handshake time, naming the file', { timeout: 10_000 }, async () => {
  const rows: { name: string; files: { chain?: string; key?: string; root?: string }; error: RegExp }[] = [
    { name: 'none there', files: {}, error: /\/root-cert\.pem: cannot read \(ENOENT\); the discovery server's TLS root/ },
    {
      name: 'no key',
      files: { chain: pair.cert, root: ca.cert },
      error: /\/key\.pem: cannot read \(ENOENT\); our client certificate for --controlPlaneAuthPolicy MUTUAL_TLS$/,
    },
    { name: 'no root', files: { chain: pair.cert, key: pair.key }, error: /\/root-cert\.pem: cannot read \(ENOENT\)/ },
    { name: 'a chain that is not PEM', files: { chain: 'garbage', key: pair.key, root: ca.cert }, error: /\/cert-chain\.pem: not a PEM certificate$/ },
    { name: 'a key that is not PEM', files: { chain: pair.cert, key: 'garbage', root: ca.cert }, error: /\/key\.pem: not a PEM private key$/ },
    { name: 'a root that is not PEM', files: { chain: pair.cert, key: pair.key, root: 'garbage' }, error: /\/root-cert\.pem: not a PEM certificate/ },
    {
      name: 'the key of another certificate',
      files: { chain: pair.cert, key: other.key, root: ca.cert },
      error: /\/key\.pem: does not match the certificate in cert-chain\.pem$/,
    },
    { name: 'a key that is a FIFO', files: { chain: pair.cert, key: 'fifo', root: ca.cert }, error: /\/key\.pem: cannot read \(.*not a regular file.*\)/ },
  ];
  for (const [index, row] of rows.entries()) {
    const path = await certDir(`bad-${index}`, row.files);
    await assert.rejects(loadMaterial(mutual(path)), (error: Error) => {
      assert.ok(error instanceof AgentError, row.name);
      assert.equal(error.code, 'BAD_FILE', row.name);
      assert.match(error.message, row.error, row.name);
      return true;
    });
  }
});

test('TLS refuses a root it cannot read or that is not PEM, and a token that is no token', { timeout: 10_000 }, async () => {
  execFileSync('mkfifo', [join(dir, 'fifo')]);
  await writeFile(join(dir, 'garbage'), 'not a certificate');
  await writeFile(join(dir, 'huge'), Buffer.alloc(1024 * 1024 + 1, 'a'));
  const tls = (rootCaFile: string, tokenFile?: string): UpstreamOptions => ({
    address: { host: '127.0.0.1', port: 15012 },
    policy: 'TLS',
    certDir: dir,
    rootCaFile,
    tokenFile,
  });
  const rows: { name: string; options: UpstreamOptions; error: RegExp }[] = [
    {
      name: 'no root',
      options: tls(join(dir, 'absent')),
      error: /absent: cannot read \(ENOENT\); the discovery server's TLS root \(--xdsRootCa, XDS_ROOT_CA\)$/,
    },
    { name: 'a root that is not PEM', options: tls(join(dir, 'garbage')), error: /garbage: not a PEM certificate; the discovery server's TLS root/ },
    { name: 'a root that is a FIFO', options: tls(join(dir, 'fifo')), error: /fifo: cannot read \(.*not a regular file/ },
    {
      name: 'a token that is a FIFO',
      options: tls(join(dir, 'garbage'), join(dir, 'fifo')),
      error: /--xdsTokenFile: cannot read .*fifo \(.*not a regular file/,
    },
    {
      name: 'a token over 1 MiB',
      options: tls(join(dir, 'garbage'), join(dir, 'huge')),
      error: /--xdsTokenFile: cannot read .*huge \(.*more than the 1048576 allowed/,
    },
  ];
  for (const row of rows) await assert.rejects(loadMaterial(row.options), row.error, row.name);
});

test('plaintext (NONE) reads no TLS file; the token still goes along, trimmed', async () => {
  const none = (tokenFile?: string): UpstreamOptions => ({
    address: { host: '127.0.0.1', port: 15010 },
    policy: 'NONE',
    certDir: join(dir, 'absent'),
    rootCaFile: join(dir, 'absent'),
    tokenFile,
  });
  const withToken = await loadMaterial(none(join(dir, 'token')));
  assert.equal(withToken.tls, undefined);
  assert.deepEqual(withToken.headers, { authorization: 'Bearer the-token' });
  assert.equal(withToken.credential, 'token');
  const bare = await loadMaterial(none());
  assert.deepEqual(bare.headers, {});
  assert.equal(bare.credential, 'none');
  assert.deepEqual(bare.held, { present: false, reason: 'plaintext' });
});
