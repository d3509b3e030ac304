import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { certCheckBootstrap, groupsToCheck, writeCertCheck } from './cert-check.ts';

const cluster = (index: number, common_tls_context: unknown) => ({
  name: `cert_check_${index}`,
  type: 'STATIC',
  load_assignment: {
    cluster_name: `cert_check_${index}`,
    endpoints: [{ lb_endpoints: [{ endpoint: { address: { socket_address: { address: '127.0.0.1', port_value: 1 } } } }] }],
  },
  transport_socket: {
    name: 'envoy.transport_sockets.tls',
    typed_config: { '@type': 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext', common_tls_context },
  },
});

test('the check bootstrap, whole: a node, and one static TLS cluster per group on 127.0.0.1:1', () => {
  const groups = [{ cert: '/c/chain.pem', key: '/c/key.pem' }, { cert: '/c/root.pem' }];
  assert.deepEqual(JSON.parse(certCheckBootstrap(groups)), {
    node: { id: 'cert-check', cluster: 'cert-check' },
    static_resources: {
      clusters: [
        cluster(0, { tls_certificates: [{ certificate_chain: { filename: '/c/chain.pem' }, private_key: { filename: '/c/key.pem' } }] }),
        cluster(1, { validation_context: { trusted_ca: { filename: '/c/root.pem' } } }),
      ],
    },
  });
});

test('writeCertCheck: envoy-cert-check.json beside the epochs\' bootstraps, 0600, holding the check bootstrap', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'cert-check-'));
  try {
    const groups = [{ cert: join(dir, 'root.pem') }];
    const path = await writeCertCheck(dir, groups);
    assert.equal(path, join(dir, 'envoy-cert-check.json'));
    assert.equal((await stat(path)).mode & 0o777, 0o600);
    assert.equal(await readFile(path, 'utf8'), certCheckBootstrap(groups));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('groupsToCheck: a group whose cert is there is checked; one with no file, never served, is not', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'cert-check-'));
  try {
    const pair = { cert: join(dir, 'chain.pem'), key: join(dir, 'key.pem') };
    const root = { cert: join(dir, 'root.pem') };
    await writeFile(pair.cert, 'c');
    await writeFile(root.cert, 'r');
    assert.deepEqual(await groupsToCheck([pair, root], []), [pair, root]);
    const gone = { cert: join(dir, 'gone.pem'), key: join(dir, 'gone.key') };
    assert.deepEqual(await groupsToCheck([gone, root], [root]), [root]);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
