import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmod, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { makeCa, type KeyPair, type TestCa } from '../../test/support/certs.ts';
import { watchedCertFiles, watchedCertGroups } from './cert-files.ts';
import { X509Certificate } from 'node:crypto';
import { checkCertFiles, hashCertFiles, readCertFiles, readCertNotAfter, type FileRead } from './cert-set.ts';

const groups = watchedCertGroups('/certs', 'sidecar');
const read = (files: Record<string, string | Buffer>): FileRead[] =>
  watchedCertFiles('/certs', 'sidecar').map((path) => {
    const content = files[path.slice('/certs/'.length)];
    return content === undefined ? { path } : { path, content: Buffer.from(content) };
  });

describe('cert set: consistency', () => {
  let ca: TestCa;
  let one: KeyPair;
  let two: KeyPair;
  before(async () => {
    ca = await makeCa();
    [one, two] = await Promise.all([ca.issue('one'), ca.issue('two')]);
  });
  after(() => ca.close());

  const cases: [string, () => Record<string, string>, string | undefined, string?][] = [
    ['no files at all: fine, no certificates', () => ({}), undefined],
    ['a full matching set', () => ({ 'cert-chain.pem': one.cert, 'key.pem': one.key, 'root-cert.pem': ca.cert }), undefined],
    ['a chain of two certificates', () => ({ 'cert-chain.pem': one.cert + ca.cert, 'key.pem': one.key }), undefined],
    ['a key that belongs to another certificate', () => ({ 'cert-chain.pem': one.cert, 'key.pem': two.key }), '/certs/key.pem', 'does not match'],
    [
      'a half-written certificate',
      () => ({ 'cert-chain.pem': one.cert.slice(0, one.cert.length / 2), 'key.pem': one.key }),
      '/certs/cert-chain.pem',
      'no complete',
    ],
    [
      'a chain cut in its second block',
      () => ({ 'cert-chain.pem': one.cert + ca.cert.slice(0, 80), 'key.pem': one.key }),
      '/certs/cert-chain.pem',
      'incomplete',
    ],
    ['a half-written key', () => ({ 'cert-chain.pem': one.cert, 'key.pem': one.key.slice(0, 60) }), '/certs/key.pem', 'not a valid PEM private key'],
    ['a file that is not PEM', () => ({ 'cert-chain.pem': 'hello', 'key.pem': one.key }), '/certs/cert-chain.pem', 'not a PEM certificate'],
    ['an empty certificate', () => ({ 'cert-chain.pem': '', 'key.pem': one.key }), '/certs/cert-chain.pem'],
    ['a certificate without its key', () => ({ 'cert-chain.pem': one.cert }), '/certs/key.pem', 'missing'],
    ['a key without its certificate', () => ({ 'key.pem': one.key }), '/certs/cert-chain.pem', 'missing'],
    ['a broken root certificate', () => ({ 'root-cert.pem': 'garbage' }), '/certs/root-cert.pem'],
    ['a root certificate alone', () => ({ 'root-cert.pem': ca.cert }), undefined],
    [
      'a complete PEM block that is not a certificate',
      () => ({ 'cert-chain.pem': '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n', 'key.pem': one.key }),
      '/certs/cert-chain.pem',
      '^not a valid certificate \\(',
    ],
  ];
  for (const [name, files, file, reason] of cases) {
    it(name, () => {
      const problem = checkCertFiles(groups, read(files()));
      if (!file) assert.equal(problem, undefined);
      assert.equal(problem?.file, file, JSON.stringify(problem));
      if (reason) assert.match(problem!.reason, new RegExp(reason));
    });
  }

  it('checks the ingress pair too', () => {
    const ingress = watchedCertGroups('/certs', 'ingress', '/ingress');
    const problem = checkCertFiles(ingress, [
      { path: '/ingress/tls.crt', content: Buffer.from(one.cert) },
      { path: '/ingress/tls.key', content: Buffer.from(two.key) },
    ]);
    assert.equal(problem?.file, '/ingress/tls.key');
  });
});

describe('cert set: hash and read', () => {
  it('hashes content, telling absent from empty', () => {
    const empty = hashCertFiles(read({ 'key.pem': '' }));
    assert.notEqual(empty, hashCertFiles(read({})));
    assert.equal(hashCertFiles(read({ 'key.pem': 'x' })), hashCertFiles(read({ 'key.pem': 'x' })));
    assert.notEqual(hashCertFiles(read({ 'key.pem': 'x' })), hashCertFiles(read({ 'key.pem': 'y' })));
  });

  it('reads a missing dir as absent files', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'cert-set-'));
    try {
      const [missing] = await readCertFiles([join(dir, 'nope', 'cert-chain.pem')]);
      assert.deepEqual(missing, { path: join(dir, 'nope', 'cert-chain.pem') });
      await writeFile(join(dir, 'file'), 'x');
      const [underFile] = await readCertFiles([join(dir, 'file', 'cert-chain.pem')]);
      assert.deepEqual(underFile, { path: join(dir, 'file', 'cert-chain.pem') }, 'a file where the dir should be (ENOTDIR) is absent too');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  // Root reads any mode, so CI (root) needs an error chmod cannot make: a symlink loop.
  it('reads a file that cannot be opened (a symlink loop) as an error, not as absent', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'cert-set-'));
    try {
      await symlink(join(dir, 'key.pem'), join(dir, 'key.pem'));
      const [unreadable] = await readCertFiles([join(dir, 'key.pem')]);
      assert.equal(unreadable?.error, 'ELOOP');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('reads a file without read permission as an error', { skip: process.getuid?.() === 0 && 'root reads anything' }, async () => {
    const dir = await mkdtemp(join(tmpdir(), 'cert-set-'));
    try {
      await writeFile(join(dir, 'key.pem'), 'x');
      await chmod(join(dir, 'key.pem'), 0);
      const [unreadable] = await readCertFiles([join(dir, 'key.pem')]);
      assert.equal(unreadable?.error, 'EACCES');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('reports a directory where a file should be as unreadable', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'cert-set-'));
    try {
      const [entry] = await readCertFiles([dir]);
      assert.equal(entry?.error, 'is not a regular file (a directory)');
      assert.equal(checkCertFiles([{ cert: dir }], [entry!])?.reason, 'cannot read (is not a regular file (a directory))');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it(
    'a FIFO or a device at a watched path is unreadable at once, not a read that never ends; a symlinked file (a secret volume) reads',
    { timeout: 5000 },
    async () => {
      const dir = await mkdtemp(join(tmpdir(), 'cert-set-'));
      try {
        execFileSync('mkfifo', [join(dir, 'fifo')]);
        await symlink('/dev/zero', join(dir, 'device'));
        await writeFile(join(dir, 'real'), 'PEM');
        await symlink(join(dir, 'real'), join(dir, 'linked'));
        const entries = await readCertFiles([join(dir, 'fifo'), join(dir, 'device'), join(dir, 'linked')]);
        assert.deepEqual(
          entries.map((entry) => entry.error),
          ['is not a regular file (a FIFO)', 'is not a regular file (a device)', undefined],
        );
        assert.equal(entries[2]!.content?.toString(), 'PEM');
        assert.equal(readCertNotAfter(join(dir, 'fifo')), undefined, 'the restart gate reads it synchronously: refused, never blocking');
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    },
  );
});

describe('readCertNotAfter', () => {
  it('reads the first certificate\'s notAfter; undefined when the file is missing or not a certificate', async () => {
    const ca = await makeCa();
    const dir = await mkdtemp(join(tmpdir(), 'cert-not-after-'));
    try {
      const pair = await ca.issue('leaf');
      await writeFile(join(dir, 'chain.pem'), pair.cert + ca.cert);
      await writeFile(join(dir, 'junk.pem'), 'junk');
      assert.equal(readCertNotAfter(join(dir, 'chain.pem')), Date.parse(new X509Certificate(pair.cert).validTo));
      assert.equal(readCertNotAfter(join(dir, 'junk.pem')), undefined);
      assert.equal(readCertNotAfter(join(dir, 'missing.pem')), undefined);
    } finally {
      await rm(dir, { recursive: true, force: true });
      await ca.close();
    }
  });
});
