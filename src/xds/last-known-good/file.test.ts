import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmod, chown, mkdir, mkdtemp, readdir, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, describe, it } from 'node:test';
import pino from 'pino';
import { FakeClock } from '../../shared/clock.ts';
import { LastKnownGoodConfig } from './config.ts';
import { LastKnownGoodFile, lastKnownGoodFileName, loadLastKnownGoodConfig } from './file.ts';
import { encodeLastKnownGood } from './codec.ts';
import { lenField } from '../../grpc/proto-wire.ts';

const cds = 'type.googleapis.com/envoy.config.cluster.v3.Cluster';
const dirs: string[] = [];
after(() => Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true }))));

/** A last-known-good file in a fresh dir, its log lines collected. */
async function rig(maxBytes?: number) {
  const dir = await mkdtemp(join(tmpdir(), 'kept-file-'));
  dirs.push(dir);
  const lines: { msg: string; reason?: string; types?: number; writtenAt?: string }[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  const clock = new FakeClock(Date.parse('2026-01-01T00:00:00Z'));
  const file = new LastKnownGoodFile({ configPath: dir, node: 'sidecar~1~a~b', clock, logger, maxBytes });
  return { dir, lines, clock, file };
}

describe('LastKnownGoodFile', () => {
  it('writes a second after a change, 0600, replacing the file whole; a fresh start reads it back', async () => {
    const { dir, clock, file } = await rig();
    const lastKnownGood = new LastKnownGoodConfig();
    file.follow(lastKnownGood);
    lastKnownGood.keepSotw(cds, 'v1', [lenField(4, cds)], 0);
    lastKnownGood.keepSotw(cds, 'v2', [lenField(4, cds)], 0);
    assert.deepEqual(await readdir(dir), [], 'nothing before the delay');
    clock.advance(1000);
    await file.close();
    assert.deepEqual(await readdir(dir), [lastKnownGoodFileName], 'no temporary file left');
    assert.equal((await stat(file.path)).mode & 0o777, 0o600);
    const restored = new LastKnownGoodConfig();
    const again = new LastKnownGoodFile({ configPath: dir, node: 'sidecar~1~a~b', clock, logger: pino({ level: 'silent' }) });
    await again.load(restored);
    assert.equal(restored.get('sotw', cds)?.version, 'v2');
  });

  it('writes at most every 10 s however often Envoy ACKs', async () => {
    const { clock, file } = await rig();
    const lastKnownGood = new LastKnownGoodConfig();
    file.follow(lastKnownGood);
    const writtenVersion = async () => {
      await file.idle();
      const again = new LastKnownGoodConfig();
      await new LastKnownGoodFile({ configPath: dirname(file.path), node: 'sidecar~1~a~b', clock, logger: pino({ level: 'silent' }) }).load(again);
      return again.get('sotw', cds)?.version;
    };
    lastKnownGood.keepSotw(cds, 'v1', [lenField(4, cds)], 0);
    clock.advance(1000);
    assert.equal(await writtenVersion(), 'v1');
    lastKnownGood.keepSotw(cds, 'v2', [lenField(4, cds)], 0);
    clock.advance(9999);
    assert.equal(await writtenVersion(), 'v1', 'not yet: 10 s since the last write');
    clock.advance(1);
    assert.equal(await writtenVersion(), 'v2');
  });

  it('a config over the size limit is not written, and an older file is removed', async () => {
    const { lines, clock, file } = await rig(200);
    await writeFile(file.path, 'old');
    const lastKnownGood = new LastKnownGoodConfig();
    file.follow(lastKnownGood);
    lastKnownGood.keepSotw(cds, 'v1', [Buffer.alloc(300)], 0);
    clock.advance(1000);
    await file.close();
    await assert.rejects(stat(file.path), { code: 'ENOENT' });
    assert.ok(lines.some((line) => line.msg === 'kept config too large to write; an agent restart will not have it'));
  });

  it('a config over the size limit with no older file: the one line says so, nothing fails', async () => {
    const { lines, clock, file } = await rig(200);
    const lastKnownGood = new LastKnownGoodConfig();
    file.follow(lastKnownGood);
    lastKnownGood.keepSotw(cds, 'v1', [Buffer.alloc(300)], 0);
    clock.advance(1000);
    await file.close();
    assert.deepEqual(lines.map((line) => line.msg), ['kept config too large to write; an agent restart will not have it']);
  });

  it('a config of exactly the size limit is written; one byte more is not, and the line says both sizes', async () => {
    const sample = new LastKnownGoodConfig();
    sample.keepSotw(cds, 'v1', [lenField(4, cds)], 0);
    const size = Buffer.byteLength(encodeLastKnownGood(sample, 'sidecar~1~a~b', Date.parse('2026-01-01T00:00:00Z')));
    for (const [limit, written] of [[size, true], [size - 1, false]] as const) {
      const { lines, clock, file } = await rig(limit);
      const lastKnownGood = new LastKnownGoodConfig();
      file.follow(lastKnownGood);
      lastKnownGood.keepSotw(cds, 'v1', [lenField(4, cds)], 0);
      clock.advance(1000);
      await file.close();
      assert.equal(await stat(file.path).then(() => true, () => false), written, `limit ${limit}`);
      if (!written)
        assert.deepEqual(lines[0] as unknown as { bytes: number; limit: number; file: string }, { ...lines[0], bytes: size, limit, file: file.path });
    }
  });

  it('close with nothing waiting writes nothing', async () => {
    const { dir, clock, file } = await rig();
    const lastKnownGood = new LastKnownGoodConfig();
    file.follow(lastKnownGood);
    lastKnownGood.keepSotw(cds, 'v1', [lenField(4, cds)], 0);
    clock.advance(1000);
    await file.idle();
    await rm(file.path);
    await file.close();
    assert.deepEqual(await readdir(dir), []);
  });

  it('loadLastKnownGoodConfig restores the file and writes on after it', async () => {
    const { dir, clock } = await rig();
    const kept = new LastKnownGoodConfig();
    kept.keepSotw(cds, 'v1', [lenField(4, cds)], 0);
    await writeFile(join(dir, lastKnownGoodFileName), encodeLastKnownGood(kept, 'sidecar~1~a~b', clock.now()), { mode: 0o600 });
    const { lastKnownGood, lastKnownGoodFile } = await loadLastKnownGoodConfig({
      configPath: dir,
      node: 'sidecar~1~a~b',
      clock,
      logger: pino({ level: 'silent' }),
    });
    assert.equal(lastKnownGood.get('sotw', cds)?.version, 'v1');
    lastKnownGood.keepSotw(cds, 'v2', [lenField(4, cds)], 0);
    await lastKnownGoodFile.close();
    const again = new LastKnownGoodConfig();
    await new LastKnownGoodFile({ configPath: dir, node: 'sidecar~1~a~b', clock, logger: pino({ level: 'silent' }) }).load(again);
    assert.equal(again.get('sotw', cds)?.version, 'v2');
  });

  it('a file over the size limit is ignored with one line, unread', async () => {
    const { lines, file } = await rig(10);
    await writeFile(file.path, 'x'.repeat(11));
    const lastKnownGood = new LastKnownGoodConfig();
    await file.load(lastKnownGood);
    assert.equal(lastKnownGood.has('sotw'), false);
    assert.deepEqual(lines.map((line) => line.msg), ['ignoring the kept last-known-good config file']);
    assert.match(lines[0]!.reason!, /11 bytes, more than the 10 allowed/);
  });

  it('restores what it read in one info line; no file is no line', async () => {
    const { dir, lines, clock, file } = await rig();
    const empty = new LastKnownGoodConfig();
    await file.load(empty);
    assert.equal(lines.length, 0, 'no file yet: nothing to say');
    const kept = new LastKnownGoodConfig();
    kept.keepSotw(cds, 'v1', [lenField(4, cds)], 0);
    await writeFile(file.path, encodeLastKnownGood(kept, 'sidecar~1~a~b', clock.now()), { mode: 0o600 });
    const restored = new LastKnownGoodConfig();
    await file.load(restored);
    assert.equal(restored.get('sotw', cds)?.version, 'v1');
    assert.deepEqual(lines.map((line) => [line.msg, line.types, line.writtenAt]), [['restored the last-known-good config', 1, '2026-01-01T00:00:00.000Z']]);
    assert.ok(dir);
  });

  it('a config dir that is a file: the kept file cannot be read (ENOTDIR), said in one line; writing fails in one line too', async () => {
    const { dir } = await rig();
    const notDir = join(dir, 'not-a-dir');
    await writeFile(notDir, 'x');
    const lines: { msg: string; reason?: string; err?: unknown }[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    const clock = new FakeClock(0);
    const file = new LastKnownGoodFile({ configPath: notDir, node: 'n', clock, logger });
    await file.load(new LastKnownGoodConfig());
    assert.deepEqual(lines.map((line) => [line.msg, line.reason]), [['ignoring the kept last-known-good config file', 'cannot be read (ENOTDIR)']]);
    const lastKnownGood = new LastKnownGoodConfig();
    file.follow(lastKnownGood);
    lastKnownGood.keepSotw(cds, 'v1', [lenField(4, cds)], 0);
    await file.flush();
    assert.equal(lines.at(-1)!.msg, 'cannot write the kept last-known-good config');
    assert.ok(lines.at(-1)!.err, 'the error as { err }');
  });

  it('close writes a change still waiting, and nothing after it', async () => {
    const { dir, clock, file } = await rig();
    const lastKnownGood = new LastKnownGoodConfig();
    file.follow(lastKnownGood);
    lastKnownGood.keepSotw(cds, 'v1', [lenField(4, cds)], 0);
    await file.close();
    assert.deepEqual(await readdir(dir), [lastKnownGoodFileName], 'written at close, before its delay');
    await rm(file.path);
    lastKnownGood.keepSotw(cds, 'v2', [lenField(4, cds)], 0);
    clock.advance(20_000);
    await file.flush();
    await file.idle();
    assert.deepEqual(await readdir(dir), [], 'closed: nothing more is written');
  });

  /** Real files of each kind a tampered config dir could hold at the last-known-good file's path. */
  const hostile: { name: string; make: (path: string, dir: string) => Promise<void>; reason: RegExp }[] = [
    { name: 'a FIFO (would hang a blocking open)', make: async (path) => void execFileSync('mkfifo', [path]), reason: /not a regular file \(a FIFO\)/ },
    { name: 'a symlink to a device (would stream without end)', make: (path) => symlink('/dev/zero', path), reason: /symlink/ },
    {
      name: 'a symlink to another file (whose bytes would reach the log)',
      make: async (path, dir) => (await writeFile(join(dir, 'other'), 'SECRET-CONTENT', { mode: 0o600 }), symlink(join(dir, 'other'), path)),
      reason: /symlink/,
    },
    {
      name: 'a file of another owner',
      make: async (path) => (await writeFile(path, 'SECRET-CONTENT', { mode: 0o600 }), chown(path, 4242, 4242)),
      reason: /owned by uid 4242/,
    },
    {
      name: 'a world-writable file',
      make: async (path) => (await writeFile(path, 'SECRET-CONTENT'), chmod(path, 0o666)),
      reason: /writable by group or others \(mode 0666\)/,
    },
    {
      name: 'a group-writable file',
      make: async (path) => (await writeFile(path, 'SECRET-CONTENT'), chmod(path, 0o620)),
      reason: /writable by group or others/,
    },
    { name: 'a directory', make: (path) => mkdir(path), reason: /not a regular file \(a directory\)/ },
    { name: 'our own file of garbage', make: (path) => writeFile(path, 'SECRET-CONTENT', { mode: 0o600 }), reason: /not a kept-config file/ },
  ];
  for (const row of hostile) {
    it(`refuses ${row.name}: one line saying why, never its content, and nothing restored`, { timeout: 5000 }, async () => {
      const { dir, lines, file } = await rig();
      await row.make(file.path, dir);
      const lastKnownGood = new LastKnownGoodConfig();
      await file.load(lastKnownGood);
      assert.equal(lastKnownGood.has('sotw'), false);
      assert.deepEqual(lines.map((line) => line.msg), ['ignoring the kept last-known-good config file']);
      assert.match(lines[0]!.reason!, row.reason);
      assert.ok(!JSON.stringify(lines).includes('SECRET'), 'no content in the log');
    });
  }
});

