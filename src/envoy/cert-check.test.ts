import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { watchedCertGroups } from '../watch/cert-files.ts';
import { certCheckBootstrap, groupsToCheck } from './cert-check.ts';

test('checks the groups with a file now, and a group the serving epoch had that is gone (a deleted root-cert.pem)', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'cert-check-'));
  try {
    const groups = watchedCertGroups(dir, 'sidecar');
    await writeFile(join(dir, 'key.pem'), 'k');
    assert.deepEqual(await groupsToCheck(groups, []), [groups[0]], 'a pair with one file is checked, and refused as incomplete');
    assert.deepEqual(await groupsToCheck(groups, groups), groups, 'root-cert.pem was served: its absence is checked too');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('every file is loaded through a throwaway TLS cluster', () => {
  const bootstrap = JSON.parse(certCheckBootstrap([{ cert: '/c/chain.pem', key: '/c/key.pem' }, { cert: '/c/root.pem' }])) as {
    static_resources: { clusters: { transport_socket: { typed_config: { common_tls_context: unknown } } }[] };
  };
  const contexts = bootstrap.static_resources.clusters.map((cluster) => cluster.transport_socket.typed_config.common_tls_context);
  assert.deepEqual(contexts, [
    { tls_certificates: [{ certificate_chain: { filename: '/c/chain.pem' }, private_key: { filename: '/c/key.pem' } }] },
    { validation_context: { trusted_ca: { filename: '/c/root.pem' } } },
  ]);
});
