/**
 * OUTPUT_CERTS with the real CA client: every renewal is one swap of
 * `..data`, and what a reader finds under it is a key and a chain that
 * belong together (src/ca/output-certs.test.ts hammers the swap itself).
 */
import assert from 'node:assert/strict';
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { lstat, readFile, readlink, realpath, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { it } from 'node:test';
import { assertGone } from '../support/agent.ts';
import { tempDir } from '../support/cleanup.ts';
import { startCaRig } from '../support/ca-rig.ts';
import { pollUntil } from '../support/poll.ts';

it('OUTPUT_CERTS: each renewal swaps key, chain and root in at once, through ..data, and they always match', { timeout: 60_000 }, async () => {
  await using cleanup = new AsyncDisposableStack();
  const out = join(await tempDir(cleanup, 'pilot-agent-output-certs-'), 'out');
  // 8 s certificates renewed at 20 % of their life: a swap about every 1.6 s.
  const rig = await startCaRig({ ttlSeconds: 8, env: { SECRET_GRACE_PERIOD_RATIO: '0.8', OUTPUT_CERTS: out } });
  cleanup.defer(async () => (await rig.close(), await assertGone(rig.agent.envoyPids())));
  const versions = new Set<string>();
  // Collected, not asserted in the probe: pollUntil takes a throw for "not yet".
  const mismatched: string[] = [];
  const checkNewVersion = async () => {
    const version = await realpath(join(out, '..data')).catch(() => undefined);
    if (version && !versions.has(version)) {
      versions.add(version);
      const [key, chain] = await Promise.all([readFile(join(version, 'key.pem')), readFile(join(version, 'cert-chain.pem'))]);
      if (!new X509Certificate(chain).checkPrivateKey(createPrivateKey(key))) mismatched.push(version);
    }
    return versions.size;
  };
  await pollUntil(checkNewVersion, { what: 'three certificate versions', timeoutMs: 30_000, accept: (seen) => seen >= 3, show: String }).catch(() => undefined);
  assert.ok(versions.size >= 3, `three versions swapped in (${versions.size})`);
  assert.deepEqual(mismatched, [], 'in each version the key matches the chain\'s leaf');
  for (const name of ['key.pem', 'cert-chain.pem', 'root-cert.pem']) {
    assert.ok((await lstat(join(out, name))).isSymbolicLink(), `${name} is a link`);
    assert.equal(await readlink(join(out, name)), join('..data', name));
    assert.equal((await stat(join(out, name))).mode & 0o777, 0o600);
  }
});
