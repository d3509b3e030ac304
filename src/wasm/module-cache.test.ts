import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { FakeClock } from '../shared/clock.ts';
import { silentLogger } from '../shared/log.ts';
import { Registry } from '../metrics/index.ts';
import { registerWasmMetrics } from './metrics.ts';
import { ModuleCache, moduleName, type Fetched, type ModuleRequest } from './module-cache.ts';

const wasm = (marker: number) => Buffer.from([0x00, 0x61, 0x73, 0x6d, 1, 0, 0, 0, marker]);
const sha = (bytes: Buffer | string) => createHash('sha256').update(bytes).digest('hex');
const hour = 3_600_000;

describe('Wasm module cache', () => {
  let dir: string;
  let clock: FakeClock;
  let served: Buffer;
  let fetches: string[];

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'wasm-cache-'));
    clock = new FakeClock(1_000_000_000);
    served = wasm(1);
    fetches = [];
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  const cache = () => new ModuleCache({
    dir, clock, logger: silentLogger, expiryMs: 24 * hour, purgeIntervalMs: hour, maxBytes: 1 << 20,
    fetch: async (request): Promise<Fetched> => {
      fetches.push(request.url);
      const bytes = served;
      return { digest: sha(bytes), module: async () => bytes };
    },
  });
  const fetchOf = async (request: ModuleRequest): Promise<Fetched> => {
    fetches.push(request.url);
    const bytes = served;
    return { digest: sha(bytes), module: async () => bytes };
  };
  const request = (overrides: Partial<ModuleRequest> = {}): ModuleRequest => ({
    url: 'http://modules.example/a.wasm',
    checksum: '',
    resourceName: 'r',
    resourceVersion: '1',
    pullPolicy: 'unspecified',
    timeoutMs: 5000,
    ...overrides,
  });

  it("counts lookups (hit or miss) and remote fetches by Istio's results: success, checksum_mismatched", async () => {
    const registry = new Registry();
    const metrics = registerWasmMetrics(registry, () => 0);
    const modules = new ModuleCache({
      dir,
      clock,
      logger: silentLogger,
      expiryMs: 24 * hour,
      purgeIntervalMs: hour,
      maxBytes: 1 << 20,
      fetch: fetchOf,
      metrics,
    });
    await modules.get(request({ checksum: sha(served) }));
    await modules.get(request({ checksum: sha(served) }));
    await assert.rejects(modules.get(request({ url: 'http://modules.example/b.wasm', checksum: sha('other') })));
    const text = await registry.metrics();
    assert.match(text, /^istio_agent_wasm_cache_lookup_count\{hit="false"\} 2$/m);
    assert.match(text, /^istio_agent_wasm_cache_lookup_count\{hit="true"\} 1$/m);
    assert.match(text, /^istio_agent_wasm_remote_fetch_count\{result="success"\} 1$/m);
    assert.match(text, /^istio_agent_wasm_remote_fetch_count\{result="checksum_mismatched"\} 1$/m);
  });

  it('fetches once, writes <dir>/<sha256 of the name>/<checksum>.wasm, then serves from disk', async () => {
    const modules = cache();
    const path = await modules.get(request({ checksum: sha(served) }));
    assert.equal(path, join(dir, sha('http://modules.example/a.wasm'), `${sha(served)}.wasm`));
    assert.deepEqual(await readFile(path), served);
    assert.equal(await modules.get(request({ checksum: sha(served) })), path);
    assert.equal(fetches.length, 1);
  });

  it('a wrong checksum fails, is not written, and is fetched again next time', async () => {
    const modules = cache();
    await assert.rejects(modules.get(request({ checksum: 'cd'.repeat(32) })), /has checksum .* not cdcd/);
    await assert.rejects(modules.get(request({ checksum: 'cd'.repeat(32) })));
    assert.equal(fetches.length, 2);
    assert.deepEqual(await readdir(dir).catch(() => []), []);
  });

  it('refuses bytes that are not Wasm', async () => {
    served = Buffer.from('<html>not found</html>');
    await assert.rejects(cache().get(request()), /not a Wasm binary/);
  });

  it('an agent restarted on the same directory uses the module on disk', async () => {
    const path = await cache().get(request({ checksum: sha(served) }));
    assert.equal(await cache().get(request({ checksum: sha(served) })), path);
    assert.equal(fetches.length, 1);
  });

  it('without a checksum: the URL\'s last checksum is reused, unless the resource version moved under Always', async () => {
    const modules = cache();
    await modules.get(request());
    await modules.get(request({ resourceVersion: '2' }));
    assert.equal(fetches.length, 1, 'default policy ignores the version for http');
    await modules.get(request({ resourceVersion: '3', pullPolicy: 'Always' }));
    assert.equal(fetches.length, 2, 'Always fetches again when the version changed');
    await modules.get(request({ resourceVersion: '3', pullPolicy: 'Always' }));
    assert.equal(fetches.length, 2, 'same version: cached');
    const latest = request({ url: 'oci://r.example/wasm:latest' });
    await modules.get(latest);
    await modules.get({ ...latest, resourceVersion: '2' });
    assert.equal(fetches.length, 4, 'an OCI :latest tag is pulled again by default when the version moves');
  });

  it('purges modules unused past the expiry (injected clock), found in memory or on disk', async () => {
    const modules = cache();
    const old = await modules.get(request({ url: 'http://modules.example/old.wasm' }));
    clock.advance(20 * hour);
    served = wasm(2);
    const fresh = await modules.get(request({ url: 'http://modules.example/new.wasm' }));
    clock.advance(5 * hour);
    await modules.purge();
    await assert.rejects(stat(old), 'unused for 25 h: removed');
    await stat(fresh);
    // A new agent judges by the file's last use (its mtime).
    clock.advance(20 * hour);
    await cache().purge();
    await assert.rejects(stat(fresh));
  });

  it('the purge runs every purge interval once started', async () => {
    const modules = cache();
    const path = await modules.get(request());
    modules.start();
    for (let hours = 1; hours <= 24; hours++) {
      clock.advance(hour);
      await modules.lastPurge;
    }
    await stat(path);
    clock.advance(hour);
    await modules.lastPurge;
    modules.stop();
    await assert.rejects(stat(path), 'the purge at 25 h removed it');
  });

  it('names an OCI module without its tag or digest', () => {
    assert.equal(moduleName('oci://r.example:5000/team/wasm:v1'), 'oci://r.example:5000/team/wasm');
    assert.equal(moduleName(`oci://r.example/wasm@sha256:${'a'.repeat(64)}`), 'oci://r.example/wasm');
    assert.equal(moduleName('oci://r.example:5000/wasm'), 'oci://r.example:5000/wasm');
    assert.equal(moduleName('https://h.example/x.wasm'), 'https://h.example/x.wasm');
  });

  it('a plugin checksum in capitals is the same module; one that is not 64 hex digits is never looked up on disk', async () => {
    const modules = cache();
    const path = await modules.get(request({ checksum: sha(served) }));
    assert.equal(await modules.get(request({ checksum: sha(served).toUpperCase(), resourceName: 'other' })), path);
    assert.equal(fetches.length, 1);
    await assert.rejects(
      modules.get(request({ checksum: '../../etc/passwd', resourceName: 'third' })),
      /has checksum [0-9a-f]{64}, not \.\.\/\.\.\/etc\/passwd/,
    );
    assert.equal(fetches.length, 2, 'fetched, then refused for its checksum');
  });

  it('an OCI URL pinned by digest is looked up under that digest before any fetch', async () => {
    const first = cache();
    const digest = sha(served);
    const pinned = request({ url: `oci://r.example/wasm@sha256:${digest}` });
    const path = await first.get(pinned);
    assert.equal(fetches.length, 1);
    assert.equal(await cache().get({ ...pinned, resourceVersion: '9' }), path, 'a new agent finds it on disk without fetching');
    assert.equal(fetches.length, 1);
  });

  it('pull policies: IfNotPresent reuses across versions even for :latest; Always refetches on a version change', async () => {
    const modules = cache();
    const latest = request({ url: 'oci://r.example/wasm:latest', pullPolicy: 'IfNotPresent' });
    await modules.get(latest);
    await modules.get({ ...latest, resourceVersion: '2' });
    assert.equal(fetches.length, 1);
    const tagged = request({ url: 'oci://r.example/wasm:v1' });
    await modules.get(tagged);
    await modules.get({ ...tagged, resourceVersion: '2' });
    assert.equal(fetches.length, 2, 'a tag other than latest is reused by default');
  });
});

