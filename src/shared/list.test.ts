import assert from 'node:assert/strict';
import { test } from 'node:test';
import { splitList } from './list.ts';

test('splitList: commas, spaces and empty parts', () => {
  assert.deepEqual(splitList(' a, b,,c '), ['a', 'b', 'c']);
  assert.deepEqual(splitList(''), []);
});
