import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readSourceFiles, roomOf } from '../../test/support/source-files.ts';

/**
 * The status server only reads the reconcile state and dispatches to it: it
 * never reaches Envoy around `Proxy` (a drain of its own was the third way to
 * drain Envoy). What it reads from Envoy's admin it is handed by `runtime/`.
 */
test('status/ never imports envoy/ (tests aside)', () => {
  const status = readSourceFiles().filter((file) => roomOf(file.path) === 'status');
  assert.ok(status.some((file) => file.path === 'src/status/app-probes/config.ts'), 'the scan reads status/ and its folders');
  const found = status.flatMap((file) => file.imports.filter((path) => roomOf(path) === 'envoy').map((path) => `${file.path}: ${path}`));
  assert.deepEqual(found, [], 'dispatch to the agent, or take what Envoy gives from runtime/');
});
