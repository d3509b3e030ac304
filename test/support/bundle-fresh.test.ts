import assert from 'node:assert/strict';
import { mkdir, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { it } from 'node:test';
import { tempDir } from './cleanup.ts';
import { staleSources } from './bundle-fresh.ts';

it('names the src/ files changed after the bundle was built, and a missing bundle', async () => {
  await using cleanup = new AsyncDisposableStack();
  const root = await tempDir(cleanup, 'bundle-fresh-');
  await mkdir(join(root, 'src', 'xds'), { recursive: true });
  const bundle = join(root, 'bundle.js');
  const file = (name: string, at: number) => writeFile(join(root, name), '').then(() => utimes(join(root, name), at, at));
  await file('src/old.ts', 1000);
  await file('src/xds/also-old.ts', 1000);
  assert.deepEqual(staleSources(root, bundle), [`${bundle} (missing)`]);
  await file('bundle.js', 2000);
  assert.deepEqual(staleSources(root, bundle), []);
  await file('src/xds/changed.ts', 3000);
  assert.deepEqual(staleSources(root, bundle), [join(root, 'src/xds/changed.ts')]);
});
