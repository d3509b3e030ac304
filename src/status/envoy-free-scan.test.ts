import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { test } from 'node:test';

/**
 * The status server only reads the reconcile state and dispatches to it: it
 * never reaches Envoy around `Proxy` (a drain of its own was the third way to
 * drain Envoy). What it reads from Envoy's admin it is handed by `runtime/`.
 */
function productFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return productFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') ? [path] : [];
  });
}

test('status/ never imports envoy/ (tests aside)', () => {
  const found: string[] = [];
  for (const path of productFiles(import.meta.dirname)) {
    for (const match of readFileSync(path, 'utf8').matchAll(/\bfrom\s+['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]\s*\)/g)) {
      const specifier = match[1] ?? match[2]!;
      if (/(^|\/)envoy\//.test(specifier)) found.push(`${relative(join(import.meta.dirname, '..', '..'), path)}: ${specifier}`);
    }
  }
  assert.deepEqual(found, [], 'dispatch to the agent, or take what Envoy gives from runtime/');
});
