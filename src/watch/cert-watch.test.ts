import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { makeCa, type KeyPair, type TestCa } from '../../test/support/certs.ts';
import { FakeClock } from '../shared/clock.ts';
import { silentLogger, type Logger } from '../shared/log.ts';
import { FakeChangeSource } from './change-source.ts';
import { watchedCertGroups } from './cert-files.ts';
import { CertWatch } from './cert-watch.ts';
import { shortHash, type FileRead } from './cert-set.ts';

const groups = watchedCertGroups('/certs', 'sidecar');

/** In-memory files behind the watch's `read`, plus its log lines (fields and msg). */
function setup(resyncMs = 0, source = new FakeChangeSource()) {
  const files = new Map<string, string>();
  const clock = new FakeClock();
  const hashes: string[] = [];
  const warnings: Record<string, unknown>[] = [];
  const infos: Record<string, unknown>[] = [];
  let reads = 0;
  const logger = {
    ...silentLogger,
    info: (fields: Record<string, unknown>, msg: string) => void infos.push({ ...fields, msg }),
    warn: (fields: Record<string, unknown>, msg: string) => void warnings.push({ ...fields, msg }),
  } as unknown as Logger;
  const read = async (paths: readonly string[]): Promise<FileRead[]> => {
    reads++;
    return paths.map((path) => (files.has(path) ? { path, content: Buffer.from(files.get(path)!) } : { path }));
  };
  const watch = new CertWatch({ groups, source, clock, logger, debounceMs: 200, resyncMs, onConfig: (hash) => hashes.push(hash), read });
  const put = (name: string, content: string) => files.set(`/certs/${name}`, content);
  return { clock, source, hashes, warnings, infos, watch, put, reads: () => reads };
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
    assert.deepEqual(warnings[0], {
      file: '/certs/key.pem',
      reason: 'does not match the certificate in /certs/cert-chain.pem',
      msg: 'certificate files are not a consistent set; keeping the running config until they are',
    });
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

  it('re-reads on its own and reports a change no event announced, saying so', async () => {
    const { watch, hashes, infos, clock, put } = setup(10_000);
    await watch.start();
    put('cert-chain.pem', one.cert);
    put('key.pem', one.key);
    clock.advance(9_999);
    await watch.settled();
    assert.equal(hashes.length, 1);
    clock.advance(1);
    await watch.settled();
    assert.equal(hashes.length, 2);
    assert.match(String(infos.at(-1)!.foundBy), /event was missed/);
    clock.advance(10_000);
    await watch.settled();
    assert.equal(hashes.length, 2, 'an unchanged set is not reported again');
  });

  it('leaves the re-read to a pending debounce', async () => {
    const { watch, source, clock, reads } = setup(1_000);
    await watch.start();
    clock.advance(900);
    source.emit();
    clock.advance(100);
    await watch.settled();
    assert.equal(reads(), 1, 'no re-read while the debounce runs');
    clock.advance(100);
    await watch.settled();
    assert.equal(reads(), 2);
  });

  it('logs a broken set once however often it is re-read, and again when its content changes', async () => {
    const { watch, warnings, clock, put } = setup(1_000);
    put('cert-chain.pem', 'not pem');
    put('key.pem', one.key);
    await watch.start();
    for (let i = 0; i < 3; i++) {
      clock.advance(1_000);
      await watch.settled();
    }
    assert.equal(warnings.length, 1);
    put('cert-chain.pem', 'still not pem');
    clock.advance(1_000);
    await watch.settled();
    assert.equal(warnings.length, 2, 'a new broken content is a new problem, though its reason reads the same');
    assert.equal(warnings[1]!.reason, warnings[0]!.reason);
  });

  it('a check already queued when close() is called reports nothing', async () => {
    const { watch, hashes, source, clock, put } = setup();
    await watch.start();
    put('root-cert.pem', ca.cert);
    source.emit();
    clock.advance(200);
    // The debounced check is queued but has not read the files yet: close() must stop it.
    await watch.close();
    assert.equal(hashes.length, 1);
  });

  it('stops reporting once closed', async () => {
    const { watch, hashes, source, clock, put } = setup(1_000);
    await watch.start();
    await watch.close();
    put('root-cert.pem', ca.cert);
    source.emit();
    clock.advance(200);
    assert.equal(hashes.length, 1);
    assert.equal(clock.pending, 0);
  });

  it('logs each new set with its short hash and the files present, and says when there are none', async () => {
    const { watch, hashes, infos, source, clock, put } = setup();
    await watch.start();
    put('cert-chain.pem', one.cert);
    put('key.pem', one.key);
    source.emit();
    clock.advance(200);
    await watch.settled();
    assert.deepEqual(infos, [
      { config: shortHash(hashes[0]!), files: [], msg: 'no certificate files; running without certificates' },
      { config: shortHash(hashes[1]!), files: ['/certs/cert-chain.pem', '/certs/key.pem'], msg: 'certificate files changed' },
    ]);
  });

  it('re-reads again after a file event was read: a later change no event announced is still found', async () => {
    const { watch, hashes, infos, source, clock, put } = setup(1_000);
    await watch.start();
    source.emit();
    clock.advance(200);
    await watch.settled();
    put('root-cert.pem', ca.cert);
    clock.advance(800);
    await watch.settled();
    assert.equal(hashes.length, 2);
    assert.match(String(infos.at(-1)!.foundBy), /event was missed/);
  });

  it('an event while starting is read by its debounce, not taken for a missed one by an earlier re-read', async () => {
    const { watch, infos, source, clock, put } = setup(100);
    const started = watch.start();
    source.emit();
    await started;
    put('root-cert.pem', ca.cert);
    clock.advance(100);
    await watch.settled();
    assert.equal(infos.length, 1, 'the re-read leaves it to the pending debounce');
    clock.advance(100);
    await watch.settled();
    assert.deepEqual([infos.length, infos.at(-1)!.foundBy], [2, undefined]);
  });

  it('a broken set whose check was queued when close() is called is not logged', async () => {
    const { watch, warnings, source, clock, put } = setup();
    await watch.start();
    put('key.pem', one.key);
    source.emit();
    clock.advance(200);
    await watch.close();
    assert.deepEqual(warnings, []);
  });

  it('an event the source delivers while closing leaves no timer behind', async () => {
    class ClosingSource extends FakeChangeSource {
      override close(): Promise<void> {
        this.emit('late');
        return super.close();
      }
    }
    const { watch, clock } = setup(0, new ClosingSource());
    await watch.start();
    await watch.close();
    assert.equal(clock.pending, 0);
  });
});
