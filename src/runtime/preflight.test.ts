import assert from 'node:assert/strict';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { AgentError } from '../shared/errors.ts';
import { checkBinary } from './preflight.ts';

const dir = await mkdtemp(join(tmpdir(), 'preflight-edges-'));
after(() => rm(dir, { recursive: true, force: true }));
const named = (message: string) => (error: unknown) => error instanceof AgentError && error.exitCode === 2 && error.message === message;

test('--binaryPath: an executable file passes; missing, a directory or not executable is exit 2 naming the flag', async () => {
  const envoy = join(dir, 'envoy');
  await writeFile(envoy, '#!/bin/sh\n');
  await chmod(envoy, 0o755);
  await checkBinary(envoy);
  await assert.rejects(checkBinary(join(dir, 'none')), named(`--binaryPath: ${join(dir, 'none')} does not exist or is not a file`));
  await assert.rejects(checkBinary(dir), named(`--binaryPath: ${dir} does not exist or is not a file`));
  const plain = join(dir, 'plain');
  await writeFile(plain, '');
  await chmod(plain, 0o644);
  // root may execute nothing without an x bit either: X_OK needs one.
  await assert.rejects(checkBinary(plain), named(`--binaryPath: ${plain} is not executable`));
});
