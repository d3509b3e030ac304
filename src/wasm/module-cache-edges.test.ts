import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readdir, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { pino } from 'pino';
import { FakeClock } from '../shared/clock.ts';
import { Registry } from '../metrics/index.ts';
import { registerWasmMetrics } from './metrics.ts';
import { ModuleCache, moduleName, type Fetched, type ModuleCacheOptions, type ModuleRequest } from './module-cache.ts';

const wasm = (marker: number) => Buffer.from([0x00, 0x61, 0x73, 0x6d, 1, 0, 0, 0, marker]);
const sha = (bytes: Buffer | string) => createHash('sha256').update(bytes).digest('hex');
const hour = 3_600_000;
const start = 1_700_000_000_000; // whole seconds: a file's mtime holds it exactly
const url = 'http://modules.example/a.wasm';

/** What an operator sees of the cache: its files, its log lines, its metrics. */
describe('Wasm module cache: files, logs and metrics', () => {
  let dir: string;
  let clock: FakeClock;
  let served: Buffer;
  let fetches: ModuleRequest[];
  let blobs: number;
  let lines: Array<Record<string, unknown>>;
  let registry: Registry;
  let metrics: ReturnType<typeof registerWasmMetrics>;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'wasm-edges-'));
    clock = new FakeClock(start);
    served = wasm(1);
    fetches = [];
    blobs = 0;
    lines = [];
    registry = new Registry();
    metrics = registerWasmMetrics(registry, () => 0);
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  const cache = (overrides: Partial<ModuleCacheOptions> = {}) => new ModuleCache({
    dir,
    clock,
    logger: pino({ level: 'debug' }, { write: (line: string) => void lines.push(JSON.parse(line)) }),
    expiryMs: 24 * hour,
    purgeIntervalMs: hour,
    maxBytes: 1 << 20,
    metrics,
    fetch: async (request): Promise<Fetched> => {
      fetches.push(request);
      const bytes = served;
      await nextTurn(); // as over a network: requests made together overlap
      return { digest: sha(bytes), module: async () => (blobs++, bytes) };
    },
    ...overrides,
  });
  const request = (overrides: Partial<ModuleRequest> = {}): ModuleRequest =>
    ({ url, checksum: '', resourceName: 'r', resourceVersion: '1', pullPolicy: 'unspecified', timeoutMs: 5000, ...overrides });
  const logged = (msg: string) => lines.filter((line) => line.msg === msg).map(({ level, path, url, bytes }) => ({ level, path, url, bytes }));

  it('names only OCI modules without tag or digest; an http URL keeps its port, a digest mid-path stays', () => {
    assert.equal(moduleName('http://h.example:8080'), 'http://h.example:8080');
    assert.equal(moduleName('oci://r.example/team@sha256:ab/wasm:v1'), 'oci://r.example/team@sha256:ab/wasm');
  });

  it('a checksum that is not exactly 64 hex digits is never looked up on disk, even when a file has its name', async () => {
    const folder = join(dir, sha(url));
    await mkdir(folder, { recursive: true });
    const names = ['not-a-digest', `${'a'.repeat(64)}0`, `0${'a'.repeat(64)}`];
    for (const name of names) await writeFile(join(folder, `${name}.wasm`), wasm(9));
    for (const checksum of names) await assert.rejects(cache().get(request({ checksum })), /has checksum [0-9a-f]{64}, not /);
    assert.equal(fetches.length, 3);
  });

  it('an OCI URL with a digest longer than 64 hex digits is not taken as pinned', async () => {
    const digest = sha(served);
    const folder = join(dir, sha('oci://r.example/wasm'));
    await mkdir(folder, { recursive: true });
    await writeFile(join(folder, `${digest}.wasm`), served);
    await cache().get(request({ url: `oci://r.example/wasm@sha256:${digest}0` }));
    assert.equal(fetches.length, 1);
  });

  it('logs a module found on disk once (debug, with path and url) and a fetched one (info, with its size)', async () => {
    const path = await cache().get(request({ checksum: sha(served) }));
    assert.deepEqual(logged('Wasm module fetched and cached'), [{ level: 30, path, url, bytes: served.length }]);
    const again = cache();
    await again.get(request({ checksum: sha(served) }));
    await again.get(request({ checksum: sha(served), resourceName: 'other' }));
    assert.deepEqual(logged('Wasm module found on disk'), [{ level: 20, path, url, bytes: undefined }]);
  });

  it('writes a module (and its atime and mtime, its last use) even when the cache directory does not exist yet', async () => {
    const modules = cache({ dir: join(dir, 'nested', 'cache') });
    const path = await modules.get(request({ checksum: sha(served) }));
    const info = await stat(path);
    assert.deepEqual([info.atimeMs, info.mtimeMs], [start, start]);
  });

  it('two versions of one URL live side by side in its folder', async () => {
    const modules = cache();
    await modules.get(request({ pullPolicy: 'Always' }));
    served = wasm(2);
    await modules.get(request({ pullPolicy: 'Always', resourceVersion: '2' }));
    assert.deepEqual((await readdir(join(dir, sha(url)))).sort(), [sha(wasm(1)), sha(wasm(2))].sort().map((digest) => `${digest}.wasm`));
    assert.equal(modules.size, 2);
  });

  it('requests made together for different URLs, checksums or pull secrets fetch apart; the same request is looked up once', async () => {
    const modules = cache();
    const [a, b] = await Promise.all([modules.get(request()), modules.get(request({ url: 'http://modules.example/b.wasm' }))]);
    assert.notEqual(a, b);
    const right = request({ url: 'http://modules.example/c.wasm', checksum: sha(served) });
    const results = await Promise.allSettled([modules.get(right), modules.get({ ...right, checksum: sha('other'), resourceName: 'r2' })]);
    assert.deepEqual(results.map((result) => result.status), ['fulfilled', 'rejected']);
    const secret = request({ url: 'http://modules.example/d.wasm' });
    await Promise.all([modules.get({ ...secret, pullSecret: 's1' }), modules.get({ ...secret, pullSecret: 's2', resourceName: 'r2' })]);
    assert.deepEqual(fetches.slice(-2).map((fetched) => fetched.pullSecret).sort(), ['s1', 's2']);
    const once = request({ url: 'http://modules.example/e.wasm', checksum: sha(served) });
    await Promise.all([modules.get(once), modules.get(once)]);
    assert.match(await registry.metrics(), /^istio_agent_wasm_cache_lookup_count\{hit="false"\} 3$/m);
  });

  it('a request without a pull secret and one with an empty secret share one fetch', async () => {
    const modules = cache();
    await Promise.all([modules.get(request()), modules.get(request({ pullSecret: '', resourceName: 'r2' }))]);
    assert.equal(fetches.length, 1);
  });

  it('counts a fetch that fails as download_failure', async () => {
    const modules = cache({ fetch: async () => Promise.reject(new Error('connection refused')) });
    await assert.rejects(modules.get(request()), /connection refused/);
    assert.match(await registry.metrics(), /^istio_agent_wasm_remote_fetch_count\{result="download_failure"\} 1$/m);
  });

  it('without a checksum, a digest already on disk is not downloaded again', async () => {
    const path = await cache().get(request({ checksum: sha(served) }));
    assert.equal(await cache().get(request()), path);
    assert.deepEqual([fetches.length, blobs], [2, 1]);
  });

  it('remembers the version a URL was first fetched at, and one seen under IfNotPresent, for Always', async () => {
    const modules = cache();
    await modules.get(request({ pullPolicy: 'Always' }));
    await modules.get(request({ pullPolicy: 'Always' }));
    assert.equal(fetches.length, 1);
    await modules.get(request({ pullPolicy: 'IfNotPresent', resourceVersion: '2' }));
    await modules.get(request({ pullPolicy: 'Always', resourceVersion: '2' }));
    assert.equal(fetches.length, 1);
  });

  it('an http URL ending in :latest is reused across versions by default (only OCI :latest is pulled again)', async () => {
    const modules = cache();
    await modules.get(request({ url: 'http://modules.example/wasm:latest' }));
    await modules.get(request({ url: 'http://modules.example/wasm:latest', resourceVersion: '2' }));
    assert.equal(fetches.length, 1);
  });

  it('a purged module is forgotten: the cache empties, the removal is logged, and its URL may then serve new bytes', async () => {
    const modules = cache();
    const path = await modules.get(request());
    assert.equal(modules.size, 1);
    clock.advance(25 * hour);
    await modules.purge();
    assert.equal(modules.size, 0);
    assert.deepEqual(logged('expired Wasm module removed'), [{ level: 30, path, url: undefined, bytes: undefined }]);
    served = wasm(2);
    assert.notEqual(await modules.get(request()), path);
  });

  it('the purge leaves files that are neither modules nor temporaries, and a temporary exactly at the expiry', async () => {
    const folder = join(dir, sha(url));
    await mkdir(folder, { recursive: true });
    for (const name of ['notes.txt', 'x.wasm.1.tmp']) {
      await writeFile(join(folder, name), 'x');
      await utimes(join(folder, name), start / 1000, start / 1000);
    }
    clock.advance(24 * hour);
    await cache().purge();
    assert.deepEqual((await readdir(folder)).sort(), ['notes.txt', 'x.wasm.1.tmp']);
    clock.advance(48 * hour);
    await cache().purge();
    assert.deepEqual(await readdir(folder), ['notes.txt']);
  });

  it('a purge that fails is logged as a warning and the next one still runs; stop() ends them', async () => {
    const folder = join(dir, sha(url));
    const stuck = join(folder, 'stuck.wasm');
    await mkdir(stuck, { recursive: true });
    await utimes(stuck, start / 1000 - 48 * 3600, start / 1000 - 48 * 3600); // a directory in an expired module's place: rm refuses it
    const modules = cache();
    const path = await modules.get(request({ url: 'http://modules.example/b.wasm' }));
    modules.start();
    clock.advance(hour);
    await modules.lastPurge;
    clock.advance(hour);
    await modules.lastPurge;
    const warnings = lines.filter((line) => line.msg === 'Wasm cache purge failed');
    assert.equal(warnings.length, 2);
    assert.match((warnings[0]!.err as { message: string }).message, /directory/);
    await rm(stuck, { recursive: true });
    modules.stop();
    clock.advance(48 * hour);
    await modules.lastPurge;
    await stat(path);
  });
});
