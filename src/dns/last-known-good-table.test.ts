import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmod, mkdtemp, rm, stat, symlink, writeFile } from 'node:fs/promises';
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
    assert.deepEqual(await lastKnownGood('sidecar~2~b~').read(), { ok: false, reason: 'kept for another node, not this one' });
    now += 25 * 3_600_000;
    assert.equal((await lastKnownGood().read()).ok, false);
  });

  const refusals: [string, (at: string) => Promise<unknown>, RegExp][] = [
    ['a FIFO (the start hung on it)', async (at) => execFileSync('mkfifo', [at]), /not a regular file \(a FIFO\)/],
    ['a symlink to /dev/zero (668 MB read)', (at) => symlink('/dev/zero', at), /ELOOP/],
    ['a symlink to a kept table', (at) => symlink(path, at), /ELOOP/],
    ['a file group or others may write', async (at) => (await writeFile(at, '{}'), chmod(at, 0o620)), /writable by group or others/],
    ['a file past maxBytes', (at) => writeFile(at, Buffer.alloc(2048, 0x20), { mode: 0o600 }), /more than the 1024 allowed/],
  ];
  for (const [name, make, reason] of refusals) {
    it(`refuses ${name} without reading it`, async () => {
      const at = join(dir, `hostile-${refusals.findIndex(([each]) => each === name)}`);
      await make(at);
      const read = await new LastKnownGoodTable({ path: at, node: 'sidecar~1~a~', now: () => now, maxBytes: 1024 }).read();
      assert.equal(read.ok, false);
      assert.match(read.ok ? '' : read.reason, reason);
    });
  }

  it('never quotes the file in its reason (an unrelated file\'s content reached the log)', async () => {
    const at = join(dir, 'unrelated');
    for (const content of ['password=SECRET-1234\n', '{"node": "SECRET-1234", "at": 1, "version": "v", "table": ""}']) {
      await writeFile(at, content, { mode: 0o600 });
      const read = await new LastKnownGoodTable({ path: at, node: 'sidecar~1~a~', now: () => now }).read();
      assert.equal(read.ok, false);
      assert.doesNotMatch(read.ok ? '' : read.reason, /SECRET/);
    }
  });
});
