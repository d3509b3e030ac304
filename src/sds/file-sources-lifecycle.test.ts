import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, test } from 'node:test';
import pino from 'pino';
import { buildCert, ecKey } from '../../test/support/cert-builder.ts';
import { Registry } from '../metrics/index.ts';
import { FakeClock } from '../shared/clock.ts';
import { FileSecretSources } from './file-sources.ts';
import { registerSdsMetrics } from './metrics.ts';
import { SecretStore } from './secret-store.ts';

const resyncMs = 60_000;
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A FileSecretSources over a fresh temp dir, closed and removed after the test; no OS bundle is found. */
async function sources(maxWatches = 256) {
  const dir = await mkdtemp(join(tmpdir(), 'file-sources-'));
  const store = new SecretStore();
  const clock = new FakeClock(1_000_000);
  const lines: Array<Record<string, unknown>> = [];
  const logger = pino({ level: 'warn' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  const registry = new Registry();
  const metrics = registerSdsMetrics(registry, store, () => 0);
  const files = new FileSecretSources({ store, clock, logger, metrics, debounceMs: 10, resyncMs, systemRoots: [], maxWatches });
  cleanups.push(() => rm(dir, { recursive: true, force: true }), () => files.close());
  return { dir, store, clock, lines, registry, files };
}

const certificate = (key = ecKey()) =>
  buildCert({ subject: 'file-sources', key, notBefore: Date.UTC(2020, 0, 1), notAfter: Date.UTC(2040, 0, 1) }).pem;

/** Lets the watches start and read (real files, chokidar), up to `ms`, until `done`; `tick` runs between turns. */
async function until(done: () => boolean, tick = () => {}, ms = 5000): Promise<void> {
  const started = performance.now();
  while (!done() && performance.now() - started < ms) {
    tick();
    await new Promise((resolve) => setImmediate(resolve));
  }
}

const overCap = /file-backed secrets are held; this one is not watched/;

test('every file-backed kind takes a watch slot; the cert dir names and unknown names take none, and letting go frees only what was taken', async () => {
  type Row = { name: string; steps: (files: FileSecretSources, dir: string) => void; slotTaken: boolean };
  const rows: Row[] = [
    { name: 'a file-cert name', steps: (files, dir) => files.acquire(`file-cert:${dir}/cert.pem~${dir}/key.pem`), slotTaken: true },
    { name: 'the OS bundle', steps: (files) => files.acquire('file-root:system'), slotTaken: true },
    {
      name: 'one file-root name, let go twice',
      steps: (files, dir) => (files.acquire(`file-root:${dir}/a.pem`), files.release(`file-root:${dir}/a.pem`), files.release(`file-root:${dir}/a.pem`)),
      slotTaken: false,
    },
    {
      name: 'names that take no slot, let go',
      steps: (files) => ['default', 'kubernetes://x'].forEach((name) => (files.acquire(name), files.release(name))),
      slotTaken: false,
    },
  ];
  for (const row of rows) {
    const { dir, store, files } = await sources(1);
    row.steps(files, dir);
    files.acquire(`file-root:${dir}/b.pem`);
    files.acquire(`file-root:${dir}/c.pem`);
    const over = ['b', 'c'].map((file) => overCap.test(store.problem(`file-root:${dir}/${file}.pem`) ?? ''));
    assert.deepEqual(over, [row.slotTaken, true], row.name);
  }
});

test('the cert dir names are fed elsewhere: no OS bundle is looked for them and letting go keeps them', async () => {
  const { store, files } = await sources();
  const served = { material: { kind: 'validation-context' as const, trustedCa: Buffer.from('roots') }, serial: '01', expiresAt: 0, files: [] };
  store.put('default', served);
  for (const name of ['default', 'ROOTCA', 'file-root:system']) files.acquire(name);
  await until(() => store.problem('file-root:system') !== undefined);
  assert.match(store.problem('file-root:system') ?? '', /^no OS trust bundle found/);
  assert.deepEqual([store.problem('default'), store.problem('ROOTCA')], [undefined, undefined]);
  files.release('default');
  files.release('ROOTCA');
  assert.equal(store.get('default')?.serial, '01');
});

test('files that are not a consistent set wait with the file and the reason, logged under the resource name', async () => {
  const { dir, store, lines, registry, files } = await sources();
  await writeFile(join(dir, 'cert.pem'), certificate());
  await writeFile(join(dir, 'key.pem'), ecKey().export({ type: 'pkcs8', format: 'pem' }));
  const name = `file-cert:${dir}/cert.pem~${dir}/key.pem`;
  files.acquire(name);
  await until(() => store.problem(name) !== undefined);
  const reason = `${dir}/key.pem does not match the certificate in ${dir}/cert.pem`;
  assert.equal(store.problem(name), reason);
  assert.deepEqual(
    lines.map(({ msg, resource, file, reason }) => ({ msg, resource, file, reason })),
    [
      { msg: 'cannot serve SDS resource; the stream waits for it', resource: name, file: undefined, reason },
      {
        msg: 'certificate files are not a consistent set; keeping the running config until they are',
        resource: name,
        file: `${dir}/key.pem`,
        reason: `does not match the certificate in ${dir}/cert.pem`,
      },
    ],
  );
  assert.match(await registry.metrics(), /istio_agent_sds_errors_total\{reason="bad_files"\} 1/);
});

test('a held name follows its file; let go or closed, its watch stops, and what close() left is not forgotten later', { timeout: 20_000 }, async () => {
  const { dir, store, clock, files } = await sources();
  const [one, two] = ['one', 'two'].map((file) => ({ name: `file-root:${dir}/${file}.pem`, path: join(dir, `${file}.pem`) }));
  const first = [certificate(), certificate()];
  await Promise.all([writeFile(one!.path, first[0]!), writeFile(two!.path, first[1]!)]);
  for (const { name } of [one!, two!]) files.acquire(name);
  const serves = (name: string, pem: string) => {
    const material = store.get(name)?.material;
    return material?.kind === 'validation-context' && String(material.trustedCa) === pem;
  };
  await until(() => serves(one!.name, first[0]!) && serves(two!.name, first[1]!));
  const next = [certificate(), certificate()];
  await Promise.all([writeFile(one!.path, next[0]!), writeFile(two!.path, next[1]!)]);
  await until(() => serves(one!.name, next[0]!) && serves(two!.name, next[1]!), () => clock.advance(resyncMs));
  assert.ok(serves(one!.name, next[0]!) && serves(two!.name, next[1]!), 'each watch re-read its file');
  files.release(one!.name);
  assert.equal(store.get(one!.name), undefined, 'let go: forgotten');
  await new Promise((resolve) => setImmediate(resolve));
  await files.close();
  assert.equal(clock.pending, 0, 'no watch is left running: neither the one let go nor the one closed');
  files.release(two!.name);
  assert.ok(serves(two!.name, next[1]!), 'a release after close() changes nothing');
});
