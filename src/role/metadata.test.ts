import assert from 'node:assert/strict';
import { test } from 'node:test';
import { metadataFromEnv } from './metadata.ts';

test('ISTIO_META_ and ISTIO_METAJSON_ become node metadata', () => {
  const env = {
    ISTIO_META_INTERCEPTION_MODE: 'REDIRECT',
    ISTIO_META_LABELS: 'ignored-by-json',
    ISTIO_METAJSON_LABELS: '{"app":"productpage","version":"v1"}',
    ISTIO_METAJSON_PORTS: '[9080]',
    ISTIO_META_: 'no name',
    PATH: '/bin',
  };
  assert.deepEqual(metadataFromEnv(env), {
    INTERCEPTION_MODE: 'REDIRECT',
    LABELS: { app: 'productpage', version: 'v1' },
    PORTS: [9080],
  });
});

test('invalid JSON names the env var', () => {
  assert.throws(() => metadataFromEnv({ ISTIO_METAJSON_LABELS: '{app' }), /^AgentError: env ISTIO_METAJSON_LABELS: is not valid JSON/);
});
