import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import pino from 'pino';
import { Registry } from '../metrics/index.ts';
import { FakeClock } from '../shared/clock.ts';
import { FileSecretSources } from './file-sources.ts';
import { registerSdsMetrics } from './metrics.ts';
import { SecretStore } from './secret-store.ts';

function sources(maxWatches: number) {
  const store = new SecretStore();
  const clock = new FakeClock(1_000_000);
  const lines: Array<{ msg: string; suppressed?: number }> = [];
  const logger = pino({ level: 'warn' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  const registry = new Registry();
  const files = new FileSecretSources({
    store,
    clock,
    logger,
    metrics: registerSdsMetrics(registry, store, () => 0),
    debounceMs: 10,
    resyncMs: 60_000,
    maxWatches,
  });
  return { store, clock, lines, files, registry };
}

const overCap = /file-backed secrets are held; this one is not watched/;

test('file-backed names past the watch cap start no watch and wait with the reason; a released one frees its slot and is forgotten', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'file-sources-'));
  const { store, files } = sources(2);
  try {
    const names = [0, 1, 2, 3].map((i) => `file-root:${dir}/root-${i}.pem`);
    for (const name of names) files.acquire(name);
    files.acquire('default'); // the cert dir's: never counted
    assert.deepEqual(names.map((name) => overCap.test(store.problem(name) ?? '')), [false, false, true, true]);
    files.release(names[0]!);
    files.release(names[2]!);
    assert.equal(store.problem(names[2]!), undefined, 'nobody holds it: forgotten');
    files.acquire(names[2]!);
    assert.equal(overCap.test(store.problem(names[2]!) ?? ''), false, 'the freed slot is used');
  } finally {
    await files.close();
    await rm(dir, { recursive: true, force: true });
  }
});

test('thousands of unknown names write at most 10 lines per 10 s; the metric counts each', async () => {
  const { lines, files, clock, registry } = sources(256);
  for (let i = 0; i < 3000; i++) files.acquire(`kubernetes://secret-${i}`);
  await new Promise((resolve) => setImmediate(resolve));
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(lines.length, 10);
  clock.advance(10_000);
  files.acquire('kubernetes://one-more');
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(lines.length, 11);
  assert.equal(lines.at(-1)!.suppressed, 2990);
  assert.match(await registry.metrics(), /istio_agent_sds_errors_total\{reason="unknown_resource"\} 3001/);
  await files.close();
});

/** A self-signed certificate and its key in `dir` (openssl), as cert.pem and key.pem. */
async function makePair(dir: string): Promise<{ cert: Buffer; key: Buffer }> {
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-keyout',
      join(dir, 'key.pem'),
      '-out',
      join(dir, 'cert.pem'),
      '-subj',
      '/CN=file-sources',
      '-days',
      '1',
    ],
    { stdio: 'ignore' },
  );
  return { cert: await readFile(join(dir, 'cert.pem')), key: await readFile(join(dir, 'key.pem')) };
}

/** Lets the watches start and read (real files, chokidar), up to `ms`, until `done`. */
async function until(done: () => boolean, ms = 5000): Promise<void> {
  const started = performance.now();
  while (!done() && performance.now() - started < ms) await new Promise((resolve) => setImmediate(resolve));
}

test('file-backed names serve the bytes read; a missing file or no OS bundle waits with the reason', { timeout: 20_000 }, async () => {
  const dir = await mkdtemp(join(tmpdir(), 'file-sources-'));
  const store = new SecretStore();
  const clock = new FakeClock(1_000_000);
  const lines: Array<{ msg: string; resource?: string; reason?: string }> = [];
  const logger = pino({ level: 'warn' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  const files = new FileSecretSources({
    store,
    clock,
    logger,
    metrics: registerSdsMetrics(new Registry(), store, () => 0),
    debounceMs: 10,
    resyncMs: 60_000,
    systemRoots: [join(dir, 'no-bundle'), join(dir, 'bundle.pem')],
  });
  try {
    const pair = await makePair(dir);
    await writeFile(join(dir, 'root.pem'), pair.cert);
    const root = `file-root:${dir}/root.pem`;
    const cert = `file-cert:${dir}/cert.pem~${dir}/key.pem`;
    const absent = `file-root:${dir}/absent.pem`;
    for (const name of [root, cert, absent, 'file-root:system']) files.acquire(name);
    await until(() => Boolean(store.get(root) && store.get(cert) && store.problem(absent) && store.problem('file-root:system')));
    assert.deepEqual(store.get(root)!.material, { kind: 'validation-context', trustedCa: pair.cert });
    assert.deepEqual(store.get(cert)!.material, { kind: 'tls-certificate', chain: pair.cert, key: pair.key });
    assert.deepEqual(store.get(cert)!.files, [`${dir}/cert.pem`, `${dir}/key.pem`]);
    assert.equal(store.problem(absent), `${dir}/absent.pem does not exist`);
    assert.equal(store.problem('file-root:system'), `no OS trust bundle found (looked for ${dir}/no-bundle, ${dir}/bundle.pem)`);
    assert.deepEqual(lines.map((line) => line.resource).sort(), [absent, 'file-root:system'].sort());
    files.release('file-root:system');
    await writeFile(join(dir, 'bundle.pem'), pair.cert);
    files.acquire('file-root:system');
    await until(() => Boolean(store.get('file-root:system')));
    assert.deepEqual(store.get('file-root:system')!.material, { kind: 'validation-context', trustedCa: pair.cert }, 'the first candidate that exists');
    assert.deepEqual(store.get('file-root:system')!.files, [`${dir}/bundle.pem`]);
  } finally {
    await files.close();
    await rm(dir, { recursive: true, force: true });
  }
});

test('a name held twice is watched once and kept until its last holder lets go', { timeout: 20_000 }, async () => {
  const dir = await mkdtemp(join(tmpdir(), 'file-sources-'));
  const { store, files } = sources(1);
  try {
    await writeFile(join(dir, 'root.pem'), (await makePair(dir)).cert);
    const name = `file-root:${dir}/root.pem`;
    files.acquire(name);
    files.acquire(name);
    files.acquire(`file-root:${dir}/other.pem`);
    assert.match(store.problem(`file-root:${dir}/other.pem`) ?? '', overCap, 'the one watch slot is taken once, by the name held twice');
    await until(() => store.get(name) !== undefined);
    files.release(name);
    assert.ok(store.get(name), 'still held once');
    files.release(name);
    assert.equal(store.get(name), undefined, 'let go: forgotten');
    files.release(name);
    files.release('never-held');
  } finally {
    await files.close();
    await rm(dir, { recursive: true, force: true });
  }
});
