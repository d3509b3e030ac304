import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { makeCa, type KeyPair, type TestCa } from '../../test/support/certs.ts';
import { FakeClock } from '../shared/clock.ts';
import { silentLogger, type Logger } from '../shared/log.ts';
import { FakeChangeSource } from './change-source.ts';
import { watchedCertGroups } from './cert-files.ts';
import { CertWatch } from './cert-watch.ts';
import type { FileRead } from './cert-set.ts';

const groups = watchedCertGroups('/certs', 'sidecar');

/** In-memory files behind the watch's `read`, plus a log of warnings. */
function setup() {
  const files = new Map<string, string>();
  const clock = new FakeClock();
  const source = new FakeChangeSource();
  const hashes: string[] = [];
  const warnings: Record<string, unknown>[] = [];
  let reads = 0;
  const logger = { ...silentLogger, info: () => undefined, warn: (fields: Record<string, unknown>) => void warnings.push(fields) } as unknown as Logger;
  const read = async (paths: readonly string[]): Promise<FileRead[]> => {
    reads++;
    return paths.map((path) => (files.has(path) ? { path, content: Buffer.from(files.get(path)!) } : { path }));
  };
  const watch = new CertWatch({ groups, source, clock, logger, debounceMs: 200, onConfig: (hash) => hashes.push(hash), read });
  const put = (name: string, content: string) => files.set(`/certs/${name}`, content);
  return { clock, source, hashes, warnings, watch, put, reads: () => reads };
}

describe('CertWatch', () => {
  let ca: TestCa;
  let one: KeyPair;
  let two: KeyPair;
  before(async () => {
    ca = await makeCa();
    [one, two] = await Promise.all([ca.issue('one'), ca.issue('two')]);
  });
  after(() => ca.close());

  it('reports the starting set at once, even with no files (no certs mode)', async () => {
    const { watch, hashes } = setup();
    await watch.start();
    assert.equal(hashes.length, 1);
  });

  it('debounces a burst of events into one read and one new config', async () => {
    const { watch, hashes, source, clock, put, reads } = setup();
    await watch.start();
    put('cert-chain.pem', one.cert);
    source.emit();
    clock.advance(150);
    put('key.pem', one.key);
    source.emit();
    clock.advance(199);
    await watch.settled();
    assert.equal(reads(), 1, 'nothing read during the burst');
    clock.advance(1);
    await watch.settled();
    assert.equal(reads(), 2);
    assert.equal(hashes.length, 2);
  });

  it('ignores events that change no content', async () => {
    const { watch, hashes, source, clock } = setup();
    await watch.start();
    source.emit('/certs/..data');
    clock.advance(200);
    await watch.settled();
    assert.equal(hashes.length, 1);
  });

  it('waits for a consistent set: a mismatched key is logged once, naming the file, and not reported', async () => {
    const { watch, hashes, warnings, source, clock, put } = setup();
    put('cert-chain.pem', one.cert);
    put('key.pem', one.key);
    await watch.start();
    put('cert-chain.pem', two.cert);
    for (let i = 0; i < 3; i++) {
      source.emit();
      clock.advance(200);
      await watch.settled();
    }
    assert.equal(hashes.length, 1, 'no new config while the key does not match');
    assert.equal(warnings.length, 1);
    assert.equal(warnings[0]!.file, '/certs/key.pem');
    put('key.pem', two.key);
    source.emit();
    clock.advance(200);
    await watch.settled();
    assert.equal(hashes.length, 2, 'the completed set is reported');
  });

  it('reports nothing at start when the set is broken, then the first good one', async () => {
    const { watch, hashes, source, clock, put } = setup();
    put('cert-chain.pem', 'not pem');
    put('key.pem', one.key);
    await watch.start();
    assert.equal(hashes.length, 0);
    put('cert-chain.pem', one.cert);
    source.emit();
    clock.advance(200);
    await watch.settled();
    assert.equal(hashes.length, 1);
  });

  it('stops reporting once closed', async () => {
    const { watch, hashes, source, clock, put } = setup();
    await watch.start();
    await watch.close();
    put('root-cert.pem', ca.cert);
    source.emit();
    clock.advance(200);
    assert.equal(hashes.length, 1);
    assert.equal(clock.pending, 0);
  });
});
