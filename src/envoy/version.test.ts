import assert from 'node:assert/strict';
import { test } from 'node:test';
import { checkIsEnvoy } from './version.ts';

test('a binary that does not print an Envoy version is bad input naming --binaryPath', async () => {
  await assert.rejects(checkIsEnvoy('/bin/true'), {
    code: 'BAD_FLAG',
    message: '--binaryPath: /bin/true is not an Envoy: `--version` printed no Envoy version',
  });
  await assert.rejects(checkIsEnvoy('/bin/false'), { message: /^--binaryPath: \/bin\/false is not an Envoy/ });
});
