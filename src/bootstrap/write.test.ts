import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { bootstrapExtension, bootstrapPath, writeBootstrap } from './write.ts';

test('a custom bootstrap keeps the extension Envoy reads its format from', () => {
  const cases: [string | undefined, string][] = [
    [undefined, '.json'],
    ['/etc/envoy/custom.json', '.json'],
    ['/etc/envoy/custom.yaml', '.yaml'],
    ['/etc/envoy/custom.YML', '.YML'],
    ['/etc/envoy/custom.pb_text', '.pb_text'],
    ['/etc/envoy/custom.conf', '.json'],
    ['/etc/envoy/custom', '.json'],
  ];
  for (const [file, extension] of cases) assert.equal(bootstrapExtension(file), extension, String(file));
  assert.equal(bootstrapPath('/c', 3, '.yaml'), '/c/envoy-rev3.yaml');
});

test('the rendered bootstrap is 0600, also over a wider file left at its path, whatever the umask', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'bootstrap-write-'));
  const umask = process.umask(0);
  try {
    const fresh = await writeBootstrap(dir, 0, '{"node":{}}');
    assert.equal((await stat(fresh)).mode & 0o777, 0o600, 'a new file');
    await writeFile(bootstrapPath(dir, 1), 'old', { mode: 0o644 });
    const over = await writeBootstrap(dir, 1, '{"node":{"id":"x"}}');
    assert.equal((await stat(over)).mode & 0o777, 0o600, 'a file that was 0644');
    assert.equal(await readFile(over, 'utf8'), '{"node":{"id":"x"}}');
  } finally {
    process.umask(umask);
    await rm(dir, { recursive: true, force: true });
  }
});
