import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

/**
 * The reducer, its interpreter, `Proxy`, `FakeProxy` and the restart gate
 * depend on nothing but `shared/` (and Node): the wiring of the other rooms
 * is `runtime/`'s, so a change there never reaches the loop's rules.
 */
const allowed = /^(\.\/[^/]+|\.\.\/shared\/[^/]+|node:[\w/]+)$/;

test('agent/ imports only shared/ and itself (tests aside)', () => {
  const found: string[] = [];
  for (const name of readdirSync(import.meta.dirname).filter((file) => file.endsWith('.ts') && !file.endsWith('.test.ts'))) {
    const text = readFileSync(join(import.meta.dirname, name), 'utf8');
    for (const match of text.matchAll(/(?:^|\n)\s*(?:import|export)\b[^'"]*?\bfrom\s+['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]\s*\)/g)) {
      const specifier = match[1] ?? match[2]!;
      if (!allowed.test(specifier)) found.push(`src/agent/${name}: ${specifier}`);
    }
  }
  assert.deepEqual(found, [], 'move the wiring to src/runtime/, or the shared piece to src/shared/');
});
