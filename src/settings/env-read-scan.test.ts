import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readSourceFiles } from '../../test/support/source-files.ts';

/**
 * Every env var is declared once, in src/settings/, and read there
 * (readAgentInputs for the proxy command): a raw read elsewhere would be a
 * setting no table lists, with its own idea of empty, booleans and errors.
 * The CLI entry hands process.env to the commands; files listed here read
 * env themselves, each with why.
 */
const allowed: Record<string, string> = {
  'src/cli/main.ts': "the CLI entry: process.env becomes the commands' context.env",
  'src/iptables/config.ts':
    "pilot-agent istio-iptables: its flags' env vars, from its own table (src/iptables/flags.ts); moving it into settings/ is left for after its mutation room",
};

/** Ways to read the env: process.env, or a variable taken by name from an env object. */
const patterns: [RegExp, string][] = [
  [/\bprocess\.env\b/, 'process.env'],
  [/\benv\.[A-Z_][A-Z0-9_]*\b/, 'env.NAME'],
  [/\benv\[/, 'env[name]'],
  [/\benv\?\.\[?[A-Z_]/, 'env?.NAME'],
];

test('no env var is read outside src/settings/ and the CLI entry', () => {
  const found: string[] = [];
  for (const { path: name, text } of readSourceFiles()) {
    if (name.startsWith('src/settings/') || name in allowed) continue;
    text.split('\n').forEach((line, index) => {
      if (/^\s*(\/\/|\*|\/\*)/.test(line)) return;
      for (const [pattern, what] of patterns) if (pattern.test(line)) found.push(`${name}:${index + 1}: ${what}: ${line.trim()}`);
    });
  }
  assert.deepEqual(found, [], 'declare the variable in a table of src/settings/ and read it there (readAgentInputs)');
});

test('the scan finds each way of reading the env (it would not pass by matching nothing)', () => {
  for (const line of ['const ip = process.env.INSTANCE_IP;', 'env.POD_NAMESPACE ?? ""', 'const value = env[name];', 'input.env.INSTANCE_IP', 'env?.HOST_IP']) {
    assert.ok(patterns.some(([pattern]) => pattern.test(line)), line);
  }
  for (const line of ['readAgentInputs({ env: context.env })', 'const { env } = options;', 'node.namespace', 'F.env.keyValues', 'environment[name]']) {
    assert.ok(!patterns.some(([pattern]) => pattern.test(line)), line);
  }
});
