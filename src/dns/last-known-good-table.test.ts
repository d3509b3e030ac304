import assert from 'node:assert/strict';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { LastKnownGoodTable } from './last-known-good-table.ts';

describe('LastKnownGoodTable', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'kept-table-'));
  after(() => rm(dir, { recursive: true, force: true }));
  const path = join(dir, 'dns-name-table.json');
  let now = 1_000_000;
  const lastKnownGood = (node = 'sidecar~1~a~') => new LastKnownGoodTable({ path, node, now: () => now });

  it('gives back what this node wrote, 0600', async () => {
    assert.deepEqual(await lastKnownGood().read(), { ok: false, reason: 'none kept' });
    await lastKnownGood().write('v1', Buffer.from([1, 2, 3]));
    assert.deepEqual(await lastKnownGood().read(), { ok: true, version: 'v1', table: Buffer.from([1, 2, 3]) });
    assert.equal((await stat(path)).mode & 0o777, 0o600);
  });

  it('gives back a table of many base64 slices byte for byte', async () => {
    const table = Buffer.from(Array.from({ length: 700_001 }, (_, at) => (at * 7919) & 255));
    await lastKnownGood().write('v2', table);
    assert.deepEqual(await lastKnownGood().read(), { ok: true, version: 'v2', table });
  });

  it('is not used by another node, nor after a day', async () => {
    assert.deepEqual(await lastKnownGood('sidecar~2~b~').read(), { ok: false, reason: 'kept for node sidecar~1~a~, not this one' });
    now += 25 * 3_600_000;
    assert.equal((await lastKnownGood().read()).ok, false);
  });
});
