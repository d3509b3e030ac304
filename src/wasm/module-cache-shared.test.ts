import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { FakeClock } from '../shared/clock.ts';
import { silentLogger } from '../shared/log.ts';
import { ModuleCache, type Fetched, type ModuleRequest } from './module-cache.ts';

const wasm = Buffer.from([0x00, 0x61, 0x73, 0x6d, 1, 0, 0, 0, 7]);
const sha = (bytes: Buffer | string) => createHash('sha256').update(bytes).digest('hex');
const url = 'http://modules.example/shared.wasm';

/** Many Wasm filters naming one module: one fetch, one write, every filter gets the file. */
describe('Wasm module cache: one module, many filters', () => {
  let dir: string;
  let fetches: number;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'wasm-shared-'));
    fetches = 0;
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  const cache = () => new ModuleCache({
    dir, clock: new FakeClock(1_000_000_000), logger: silentLogger, expiryMs: 3_600_000, purgeIntervalMs: 3_600_000, maxBytes: 1 << 20,
    fetch: async (): Promise<Fetched> => {
      fetches++;
      await nextTurn(); // the answer comes later, as over a network: the filters' requests overlap
      return { digest: sha(wasm), module: async () => wasm };
    },
  });
  const request = (resourceName: string, checksum: string): ModuleRequest =>
    ({ url, checksum, resourceName, resourceVersion: '1', pullPolicy: 'unspecified', timeoutMs: 5000 });

  for (const [label, checksum] of [['with the checksum', sha(wasm)], ['without a checksum', '']] as const) {
    it(`12 filters at once, ${label}: one fetch, one file, every filter served it, no temporary left`, async () => {
      const modules = cache();
      const results = await Promise.allSettled(Array.from({ length: 12 }, (_, index) => modules.get(request(`filter-${index}`, checksum))));
      assert.deepEqual(results.filter((result) => result.status === 'rejected'), []);
      const paths = new Set(results.map((result) => (result as PromiseFulfilledResult<string>).value));
      assert.equal(paths.size, 1);
      assert.equal(fetches, 1);
      assert.deepEqual(await readdir(join(dir, sha(url))), [`${sha(wasm)}.wasm`]);
    });
  }

  it('the purge removes a temporary a killed agent left, once past the expiry', async () => {
    const folder = join(dir, sha(url));
    await mkdir(folder, { recursive: true });
    const left = join(folder, `${sha(wasm)}.wasm.4242.0123456789ab.tmp`);
    await writeFile(left, 'half');
    const clock = new FakeClock(Date.now());
    const fetch = async () => assert.fail('nothing is fetched');
    const modules = new ModuleCache({ dir, clock, logger: silentLogger, expiryMs: 3_600_000, purgeIntervalMs: 3_600_000, maxBytes: 1 << 20, fetch });
    await modules.purge();
    assert.deepEqual(await readdir(folder), [basename(left)], 'young: perhaps a write under way');
    clock.advance(2 * 3_600_000);
    await modules.purge();
    assert.deepEqual(await readdir(folder), []);
  });

  it('a write that fails (a directory in the module\'s place) fails the fetch and leaves no temporary', async () => {
    const folder = join(dir, sha(url));
    await mkdir(join(folder, `${sha(wasm)}.wasm`, 'inside'), { recursive: true });
    await assert.rejects(cache().get(request('filter', sha(wasm))));
    assert.deepEqual(await readdir(folder), [`${sha(wasm)}.wasm`]);
  });
});
