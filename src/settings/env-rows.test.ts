import assert from 'node:assert/strict';
import { test } from 'node:test';
import { envRows, envTables } from './registry.ts';

// The env rows are the settings' one declaration (docs/settings.md lists them): each names its variable and says what it is for.
test('every env-only row names an upper-case variable, once, and says what it is for', () => {
  assert.ok(Object.keys(envTables).length >= 9, 'every env table is in the registry');
  const names = envRows.flatMap((row) => [row.env, ...(row.alsoEnv ? [row.alsoEnv] : [])]);
  for (const name of names) assert.match(name, /^[A-Z][A-Z0-9_]*[A-Z0-9]$/, JSON.stringify(name));
  assert.equal(new Set(names).size, names.length, 'a variable declared twice');
  for (const row of envRows) assert.ok(row.description.trim().length >= 10, `${row.env}: no description`);
});
