import assert from 'node:assert/strict';
import { lstat, mkdtemp, readdir, readFile, readlink, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { Worker } from 'node:worker_threads';
import { within } from '../../test/support/within.ts';
import { writeOutputCerts } from './output-certs.ts';

const version = (n: number) => ({ key: `KEY ${n}\n`, chain: `CHAIN ${n}\n`, root: `ROOT ${n}\n` });

/**
 * A reader on its own thread, as an app beside the agent: resolves `..data`
 * once per read and reads key, chain and root under it, counting reads and
 * every read whose three files are not of one version.
 */
const readerSource = `
const { workerData, parentPort } = require('node:worker_threads');
const { readFileSync, realpathSync } = require('node:fs');
const { join } = require('node:path');
const stop = new Int32Array(workerData.stop);
let reads = 0; const mixed = []; const failed = [];
while (Atomics.load(stop, 0) === 0) {
  try {
    const dir = realpathSync(join(workerData.dir, '..data'));
    const [key, chain, root] = ['key.pem', 'cert-chain.pem', 'root-cert.pem'].map((name) => readFileSync(join(dir, name), 'utf8').split(' ')[1]);
    reads++;
    if (key !== chain || chain !== root) mixed.push(key + '/' + chain + '/' + root);
  } catch (error) {
    if (reads > 0) failed.push(error.code);
  }
}
parentPort.postMessage({ reads, mixed: mixed.slice(0, 5), mixedCount: mixed.length, failed: failed.slice(0, 5) });
`;

test('OUTPUT_CERTS: a reader never sees the key of one version with the chain or root of another', { timeout: 60_000 }, async () => {
  const dir = await mkdtemp(join(tmpdir(), 'output-certs-'));
  const stop = new SharedArrayBuffer(4);
  let reader: Worker | undefined;
  try {
    await writeOutputCerts(dir, version(0));
    reader = new Worker(readerSource, { eval: true, workerData: { dir, stop } });
    const result = new Promise<{ reads: number; mixed: string[]; mixedCount: number; failed: string[] }>((resolve, reject) =>
      reader!.once('message', resolve).once('error', reject),
    );
    for (let n = 1; n <= 300; n++) await writeOutputCerts(dir, version(n));
    Atomics.store(new Int32Array(stop), 0, 1);
    const { reads, mixed, mixedCount, failed } = await within(result, 10_000, 'the reader thread to report');
    assert.ok(reads > 100, `the reader read while versions were swapped (${reads})`);
    assert.equal(mixedCount, 0, `mixed versions seen: ${mixed.join(', ')}`);
    // 300 swaps back to back can retire a version a slow read resolved two swaps ago: it then finds nothing (and resolves again), never a mix.
    assert.ok(failed.every((code) => code === 'ENOENT'), `only a retired version is missing: ${failed.join(', ')}`);
  } finally {
    // Also when a write throws: the reader spins until told to stop, and a live thread keeps the file from exiting.
    Atomics.store(new Int32Array(stop), 0, 1);
    await reader?.terminate();
    await rm(dir, { recursive: true, force: true });
  }
});

test('OUTPUT_CERTS layout: the three names are links through ..data to a private version directory; old versions go; files an older agent wrote are replaced', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'output-certs-'));
  try {
    await writeFile(join(dir, 'key.pem'), 'OLD AGENT KEY', { mode: 0o600 });
    // Concurrent writes are queued, never interleaved: the last one wins whole.
    await Promise.all([1, 2, 3, 4].map((n) => writeOutputCerts(dir, version(n))));
    for (const name of ['key.pem', 'cert-chain.pem', 'root-cert.pem']) {
      assert.ok((await lstat(join(dir, name))).isSymbolicLink(), name);
      assert.equal(await readlink(join(dir, name)), join('..data', name));
      assert.equal((await stat(join(dir, name))).mode & 0o777, 0o600, `${name} 0600`);
    }
    assert.deepEqual([await readFile(join(dir, 'key.pem'), 'utf8'), await readFile(join(dir, 'cert-chain.pem'), 'utf8')], ['KEY 4\n', 'CHAIN 4\n']);
    const versions = (await readdir(dir)).filter((entry) => entry.startsWith('..version-'));
    assert.equal(versions.length, 2, `the current version and the one before (${versions.join(', ')})`);
    assert.equal((await stat(join(dir, await readlink(join(dir, '..data'))))).mode & 0o777, 0o700);
    assert.deepEqual(
      (await readdir(dir)).filter((entry) => entry.includes('.tmp')),
      [],
      'no temporary left',
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('OUTPUT_CERTS shared (proxyless gRPC): files 0644 in 0755 directories, as Istio writes them on Kubernetes', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'output-certs-'));
  try {
    await writeOutputCerts(join(dir, 'certs'), version(1), true);
    for (const name of ['key.pem', 'cert-chain.pem', 'root-cert.pem']) assert.equal((await stat(join(dir, 'certs', name))).mode & 0o777, 0o644, name);
    assert.equal((await stat(join(dir, 'certs', '..data'))).mode & 0o777, 0o755);
    assert.equal((await stat(join(dir, 'certs'))).mode & 0o777, 0o755);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
