import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { writeAtomically } from './synced-file.ts';

describe('writeAtomically', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'synced-file-'));
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  it('overlapping writes of one target each succeed (a temporary of their own), one whole content wins, no temporary is left', async () => {
    const target = join(dir, 'module.wasm');
    const contents = Array.from({ length: 12 }, (_, index) => Buffer.alloc(64 * 1024, index));
    const results = await Promise.allSettled(contents.map((content) => writeAtomically(target, content, 0o644)));
    assert.deepEqual(results.filter((result) => result.status === 'rejected'), []);
    const written = await readFile(target);
    assert.ok(contents.some((content) => content.equals(written)), 'one write, whole');
    assert.deepEqual(await readdir(dir), ['module.wasm']);
    assert.equal((await stat(target)).mode & 0o777, 0o644);
  });

  it('a write that fails removes its temporary and says why', async () => {
    const target = join(dir, 'taken');
    await mkdir(join(target, 'inside'), { recursive: true });
    await assert.rejects(writeAtomically(target, 'content'), (error: NodeJS.ErrnoException) => ['EISDIR', 'ENOTEMPTY', 'EEXIST'].includes(error.code ?? ''));
    assert.deepEqual(await readdir(dir), ['taken']);
  });
});
