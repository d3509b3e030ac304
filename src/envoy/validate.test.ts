import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { envoyBin } from '../../test/support/paths.ts';
import { bootstrapVerdict } from './validate.ts';

describe('bootstrapVerdict: Envoy\'s verdict, and --binaryPath checked only when the verdict is not its OK', () => {
  let dir: string;
  let valid: string;
  let invalid: string;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'validate-'));
    valid = join(dir, 'valid.json');
    invalid = join(dir, 'invalid.json');
    await writeFile(valid, JSON.stringify({ admin: { address: { socket_address: { address: '127.0.0.1', port_value: 0 } } } }));
    await writeFile(invalid, JSON.stringify({ admin: { address: { socket_address: { address: '127.0.0.1', port_value: 'nope' } } } }));
  });
  after(() => rm(dir, { recursive: true, force: true }));

  it('accepts what Envoy accepts', async () => {
    assert.deepEqual(await bootstrapVerdict(envoyBin, valid), { accepted: true });
  });

  it('a bootstrap Envoy rejects is BOOTSTRAP_REJECTED with its reason', async () => {
    const verdict = await bootstrapVerdict(envoyBin, invalid);
    assert.ok(!verdict.accepted);
    assert.equal(verdict.code, 'BOOTSTRAP_REJECTED');
    assert.equal(verdict.message, `${invalid}: Envoy rejects the bootstrap: ${verdict.reason}`);
    assert.match(verdict.reason, /port_value/);
  });

  // /bin/true exits 0 to anything: a zero exit without Envoy's OK line is no verdict.
  for (const binary of ['/bin/true', '/bin/false']) {
    it(`${binary} is not an Envoy, named as --binaryPath`, async () => {
      const verdict = await bootstrapVerdict(binary, valid);
      assert.ok(!verdict.accepted);
      assert.equal(verdict.code, 'BAD_FLAG');
      assert.match(verdict.message, new RegExp(`^--binaryPath: ${binary} is not an Envoy`));
    });
  }
});
