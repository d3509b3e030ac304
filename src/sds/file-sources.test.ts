import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
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
  const files = new FileSecretSources({ store, clock, logger, metrics: registerSdsMetrics(registry, store, () => 0), debounceMs: 10, resyncMs: 60_000, maxWatches });
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
