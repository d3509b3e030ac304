/**
 * What the end-to-end tests share lives in test/support/ (rigs behind the one
 * starter in rig.ts, pods, resources), so test/e2e/ holds test files only.
 */
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { it } from 'node:test';
import { repoRoot } from '../support/paths.ts';

it('test/e2e/ holds only *.test.ts files; shared helpers belong in test/support/', () => {
  const others = readdirSync(join(repoRoot, 'test', 'e2e')).filter((name) => !name.endsWith('.test.ts'));
  assert.deepEqual(others, []);
});
