import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readSourceFiles, roomOf } from '../../test/support/source-files.ts';

/**
 * The reducer, its interpreter, `Proxy`, `FakeProxy` and the restart gate
 * depend on nothing but `shared/` (and Node): the wiring of the other rooms
 * is `runtime/`'s, so a change there never reaches the loop's rules.
 */
const allowed = /^(\.\/[^/]+|\.\.\/shared\/[^/]+|node:[\w/]+)$/;

test('agent/ imports only shared/ and itself (tests aside)', () => {
  const agent = readSourceFiles().filter((file) => roomOf(file.path) === 'agent');
  assert.ok(agent.some((file) => file.path === 'src/agent/reconcile.ts'), 'the scan reads the agent room');
  const found = agent.flatMap((file) => file.specifiers.filter(({ from }) => !allowed.test(from)).map(({ from }) => `${file.path}: ${from}`));
  assert.deepEqual(found, [], 'move the wiring to src/runtime/, or the shared piece to src/shared/');
});
