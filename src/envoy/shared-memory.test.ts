import assert from 'node:assert/strict';
import { access, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { removeSharedMemory } from './shared-memory.ts';

test("removes the shared memory of this agent's base id (× 10, as Envoy names it), and nothing else", async () => {
  const dir = await mkdtemp(join(tmpdir(), 'shm-'));
  try {
    const ours = join(dir, 'envoy_shared_memory_1230');
    const theirs = join(dir, 'envoy_shared_memory_4560');
    await Promise.all([writeFile(ours, ''), writeFile(theirs, ''), writeFile(join(dir, 'base-id'), '123\n')]);
    assert.equal(await removeSharedMemory(join(dir, 'base-id'), dir), ours);
    await assert.rejects(access(ours));
    await access(theirs);
    assert.equal(await removeSharedMemory(join(dir, 'no-base-id'), dir), undefined, 'no base id written: nothing to remove');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
