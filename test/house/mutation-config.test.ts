/**
 * The mutation config stays true to the code: every room names files that
 * exist, and every equivalent mutant it ignores still matches code in its
 * file (a stale entry ignores nothing and hides that the code moved).
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { it } from 'node:test';
// @ts-expect-error: plain JavaScript read by Stryker, no types of its own
import { rooms } from '../../mutation/rooms.mjs';
// @ts-expect-error: plain JavaScript read by Stryker, no types of its own
import { equivalent } from '../../mutation/equivalent.mjs';

type Room = { mutate: string[]; tests: string[] };
type Equivalent = { file: string; code: string; parent?: string };

it('every room mutates and tests files that exist', () => {
  const named = Object.values(rooms as Record<string, Room>).flatMap((room) => [...room.mutate, ...room.tests]);
  const missing = named.map((file) => file.replace(/:\d+-\d+$/, '')).filter((file) => !existsSync(file));
  assert.deepEqual(missing, []);
});

it('every equivalent mutant names code still in its file', () => {
  const stale = (equivalent as Equivalent[]).flatMap((entry) => {
    const text = readFileSync(entry.file, 'utf8');
    return [entry.code, entry.parent].filter((code) => code !== undefined && !text.includes(code)).map((code) => `${entry.file}: ${JSON.stringify(code)}`);
  });
  assert.deepEqual(stale, []);
});
