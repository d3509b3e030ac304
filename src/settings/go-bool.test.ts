import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseBool } from '../iptables/config.ts';
import { coerceMetadata } from '../role/metadata-types.ts';
import { AgentError } from '../shared/errors.ts';
import { readEnvSetting } from './env-settings.ts';
import { envRows, flagRows as allFlagRows } from './registry.ts';

/** Go's strconv.ParseBool takes exactly these; Istio reads every boolean env var with it. */
const goTrue = ['1', 't', 'T', 'TRUE', 'true', 'True'];
const goFalse = ['0', 'f', 'F', 'FALSE', 'false', 'False'];
// Names every object has (toString, constructor, __proto__) are no booleans either.
const notBools = ['yes', 'no', 'on', 'tRUE', 'fALSE', 'y', '2', ' true', 'true ', 'toString', 'constructor', '__proto__', 'hasOwnProperty'];

/** Istio's boolean env vars the agent reads; each must take Go's set and nothing else. */
const istioBools = [
  'ISTIO_META_DNS_CAPTURE', 'ISTIO_META_ENABLE_DNS_SERVER', 'DNS_FORWARD_PARALLEL', 'PKCS8_KEY', 'FILE_MOUNTED_CERTS', 'DISABLE_ENVOY',
  'REWRITE_PROBE_LEGACY_LOCALHOST_DESTINATION', 'ISTIO_ENABLE_HTTP2_PROBING', 'PILOT_AGENT_MERGE_ENVOY_STATS', 'ENABLE_PROBE_KEEPALIVE_CONNECTIONS',
  'ISTIO_AGENT_ENABLE_WASM_REMOTE_LOAD_CONVERSION', 'ISTIO_DELTA_XDS', 'ENVOY_SKIP_DEPRECATED_LOGS', 'EXIT_ON_ZERO_ACTIVE_CONNECTIONS',
];

const flagRows = allFlagRows.filter((row) => row.env !== undefined);

/** The row's value for one env text, read as the agent reads that variable. */
function read(name: string, text: string): unknown {
  const envRow = envRows.find((row) => row.env === name);
  if (envRow) return readEnvSetting({ [name]: text }, envRow);
  const flagRow = flagRows.find((row) => row.env === name);
  assert.ok(flagRow?.parse, `${name} has a row with a parser`);
  return flagRow.parse(text);
}

test("every Istio boolean env var takes exactly Go's strconv.ParseBool set (ISTIO_META_DNS_CAPTURE=t is true)", () => {
  for (const name of istioBools) {
    for (const text of goTrue) assert.equal(read(name, text), true, `${name}=${text}`);
    for (const text of goFalse) assert.equal(read(name, text), false, `${name}=${text}`);
  }
});

test('any other value of an Istio boolean env var is bad input naming the variable (exit 2)', () => {
  for (const name of istioBools.filter((name) => envRows.some((row) => row.env === name))) {
    for (const text of notBools) {
      const named = (error: unknown) =>
        error instanceof AgentError && error.exitCode === 2 && error.message === `env ${name}: "${text}" is not a boolean (true or false)`;
      assert.throws(() => read(name, text), named, `${name}=${text}`);
    }
  }
  for (const name of istioBools.filter((name) => flagRows.some((row) => row.env === name))) {
    for (const text of notBools) assert.throws(() => read(name, text), { message: `"${text}" is not a boolean (true or false)` }, `${name}=${text}`);
  }
});

test("istio-iptables flags and string-bool node metadata use the same parser (trimmed flags aside)", () => {
  for (const text of goTrue) assert.equal(parseBool({ text: ` ${text} `, name: '--x' }), true, text);
  for (const text of goTrue) assert.deepEqual(coerceMetadata('DNS_CAPTURE', text), { ok: true, value: 'true' }, text);
  for (const text of goFalse) assert.deepEqual(coerceMetadata('DNS_CAPTURE', text), { ok: true, value: 'false' }, text);
  for (const text of ['tRUE', 'yes', 'on']) {
    assert.throws(() => parseBool({ text, name: '--x' }), { message: `--x: "${text}" is not true or false` }, text);
    assert.equal(coerceMetadata('DNS_CAPTURE', text).ok, false, text);
  }
});
