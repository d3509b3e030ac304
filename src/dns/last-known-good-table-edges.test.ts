import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { lastKnownGoodMaxAgeMs } from '../shared/last-known-good.ts';
import { LastKnownGoodTable } from './last-known-good-table.ts';

const node = 'sidecar~198.18.0.5~a~';
const now = 10 * lastKnownGoodMaxAgeMs;
const kept = (fields: Record<string, unknown>) => JSON.stringify({ node, at: now, version: 'v1', table: Buffer.from([1, 2]).toString('base64'), ...fields });

describe('LastKnownGoodTable: what each kept file gives', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'kept-table-edges-'));
  after(() => rm(dir, { recursive: true, force: true }));
  let count = 0;
  const readText = async (text: string, options: { maxBytes?: number } = {}) => {
    const path = join(dir, `kept-${count++}.json`);
    await writeFile(path, text, { mode: 0o600 });
    return new LastKnownGoodTable({ path, node, now: () => now, ...options }).read();
  };

  const cases: [string, string, string | { version: string; table: number[] }][] = [
    ['a whole table', kept({}), { version: 'v1', table: [1, 2] }],
    ['an empty table', kept({ table: '' }), { version: 'v1', table: [] }],
    ['written exactly a day ago', kept({ at: now - lastKnownGoodMaxAgeMs }), { version: 'v1', table: [1, 2] }],
    ['written a day and a minute ago', kept({ at: now - lastKnownGoodMaxAgeMs - 60_000 }), 'written 1441 minutes ago, more than the 1440 allowed'],
    ['not JSON', '{"node":', 'not JSON'],
    ['JSON null', 'null', 'not a kept name table'],
    ['a JSON string', '"kept"', 'not a kept name table'],
    ['no version', kept({ version: undefined }), 'not a kept name table'],
    ['a numeric version', kept({ version: 1 }), 'not a kept name table'],
    ['no table', kept({ table: undefined }), 'not a kept name table'],
    ['a string time', kept({ at: String(now) }), 'not a kept name table'],
    ['another node', kept({ node: 'sidecar~198.18.0.6~b~' }), 'kept for another node, not this one'],
    ['no node', kept({ node: undefined }), 'kept for another node, not this one'],
  ];
  for (const [name, text, want] of cases) {
    it(`${typeof want === 'string' ? `refuses ${name}: ${want}` : `takes ${name}`}`, async () => {
      const read = await readText(text);
      assert.deepEqual(read, typeof want === 'string' ? { ok: false, reason: want } : { ok: true, version: want.version, table: Buffer.from(want.table) });
    });
  }

  it('reads a file over 1 KiB by default (64 MiB), and says why a directory is unreadable', async () => {
    const large = kept({ table: Buffer.alloc(4096, 7).toString('base64') });
    assert.equal((await readText(large)).ok, true);
    assert.deepEqual(await readText(large, { maxBytes: large.length }).then((read) => read.ok), true);
    assert.match(await readText(large, { maxBytes: large.length - 1 }).then((read) => (read.ok ? '' : read.reason)), /^unreadable: /);
    await mkdir(join(dir, 'a-directory'));
    const read = await new LastKnownGoodTable({ path: join(dir, 'a-directory'), node, now: () => now }).read();
    assert.match(read.ok ? '' : read.reason, /^unreadable: /);
  });

  it('writes in order, the newest last, and a failed write does not stop the next', async () => {
    const home = join(dir, 'queued');
    const path = join(home, 'kept.json');
    await mkdir(home);
    const table = new LastKnownGoodTable({ path, node, now: () => now });
    const writes = [table.write('v1', Buffer.from([1])), table.write('v2', Buffer.from([2]))];
    await Promise.all(writes);
    assert.deepEqual(await table.read(), { ok: true, version: 'v2', table: Buffer.from([2]) });
    await rm(home, { recursive: true });
    await assert.rejects(table.write('v3', Buffer.from([3])));
    await mkdir(home);
    await table.write('v4', Buffer.from([4]));
    await table.close();
    assert.deepEqual(JSON.parse(await readFile(path, 'utf8')), { node, at: now, version: 'v4', table: Buffer.from([4]).toString('base64') });
  });

  it('close waits for a write still queued', async () => {
    const path = join(dir, 'closing.json');
    const table = new LastKnownGoodTable({ path, node, now: () => now });
    void table.write('v5', Buffer.from([5]));
    await table.close();
    assert.equal(JSON.parse(await readFile(path, 'utf8')).version, 'v5');
  });

  it('turns the loop between slices of 192 KiB while it writes a large table, and writes it whole', async () => {
    const slice = 3 * 64 * 1024;
    for (const [size, turns] of [[0, 0], [slice, 0], [slice + 1, 1], [2 * slice, 1], [3 * slice + 2, 3]] as const) {
      const path = join(dir, `sliced-${size}.json`);
      let turned = 0;
      const table = new LastKnownGoodTable({ path, node, now: () => now, yieldToLoop: async () => void turned++ });
      const bytes = Buffer.alloc(size, size % 251);
      await table.write('v6', bytes);
      assert.equal(turned, turns, `${size} bytes`);
      assert.deepEqual(await table.read(), { ok: true, version: 'v6', table: bytes });
    }
  });
});
