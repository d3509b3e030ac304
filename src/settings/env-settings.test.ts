import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AgentError } from '../shared/errors.ts';
import { isEnvSet, readEnvSetting, readEnvSettings, readEnvText } from './env-settings.ts';
import { readPrefixedEnv } from './pod-env.ts';

const number = (text: string) => {
  if (!/^\d+$/.test(text)) throw new Error(`"${text}" is not a number`);
  return Number(text);
};
const row = { env: 'A_VAR', alsoEnv: 'B_VAR', default: '7', parse: number, description: 'a number' };
const bad = (message: string) => (error: unknown) => error instanceof AgentError && error.exitCode === 2 && error.message === message;

test('an env row: its variable, else its other name, else the default, each through the parser; empty is unset', () => {
  const rows: [Record<string, string>, number][] = [
    [{}, 7],
    [{ A_VAR: '1' }, 1],
    [{ B_VAR: '2' }, 2],
    [{ A_VAR: '1', B_VAR: '2' }, 1],
    [{ A_VAR: '', B_VAR: '2' }, 2],
    [{ A_VAR: '', B_VAR: '' }, 7],
  ];
  for (const [env, want] of rows) assert.equal(readEnvSetting(env, row), want, JSON.stringify(env));
  assert.deepEqual([isEnvSet({}, row), isEnvSet({ A_VAR: '' }, row), isEnvSet({ B_VAR: 'x' }, row), isEnvSet({ A_VAR: 'x' }, row)], [false, false, true, true]);
  assert.equal(readEnvSetting({}, { env: 'A_VAR', description: '' }), undefined);
  assert.equal(readEnvSetting({ A_VAR: 'text' }, { env: 'A_VAR', description: '' }), 'text');
  assert.equal(readEnvSetting({}, { env: 'A_VAR', default: 'd', description: '' }), 'd');
});

test('a bad value names the variable that carried it; a required row unset names its own variable and the reason', () => {
  assert.throws(() => readEnvSetting({ A_VAR: 'x' }, row), bad('env A_VAR: "x" is not a number'));
  assert.throws(() => readEnvSetting({ B_VAR: 'y' }, row), bad('env B_VAR: "y" is not a number'));
  assert.throws(() => readEnvSetting({}, { ...row, default: 'z' }), bad('env A_VAR: "z" is not a number'));
  const required = { env: 'A_VAR', alsoEnv: 'B_VAR', required: 'must be set for the test', description: '' };
  assert.throws(() => readEnvSetting({ A_VAR: '' }, required), bad('env A_VAR: must be set for the test'));
  assert.equal(readEnvSetting({ B_VAR: 'v' }, required), 'v');
  assert.deepEqual(readEnvSettings({ A_VAR: '3' }, { first: row, second: { env: 'C_VAR', description: '' } }), { first: 3, second: undefined });
});

test("a bad value's error keeps the parser's as its cause", () => {
  const error = (() => {
    try {
      readEnvSetting({ A_VAR: 'x' }, row);
    } catch (thrown) {
      return thrown as Error;
    }
  })();
  assert.deepEqual([error?.message, (error?.cause as Error | undefined)?.message], ['env A_VAR: "x" is not a number', '"x" is not a number']);
});

test('readEnvText passes the variable on as set (empty included), never its other name; readPrefixedEnv takes <PREFIX><NAME> only', () => {
  assert.deepEqual([readEnvText({ A_VAR: '' }, row), readEnvText({ B_VAR: 'b' }, row), readEnvText({ A_VAR: 'a' }, row)], ['', undefined, 'a']);
  const env = { X_A: '1', X_: 'no name', Y_B: '2', XA: 'no prefix', X_C: undefined, Z: 'z' };
  assert.deepEqual(readPrefixedEnv(env, ['X_', 'Y_']), { X_A: '1', Y_B: '2' });
  assert.deepEqual(readPrefixedEnv(env, []), {});
});
