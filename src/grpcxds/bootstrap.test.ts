import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { AgentError } from '../shared/errors.ts';
import { buildGrpcBootstrap, writeGrpcBootstrap } from './bootstrap.ts';

const input = {
  xdsSocketPath: '/etc/istio/proxy/XDS',
  nodeId: 'sidecar~10.0.0.7~app-1.default~default.svc.cluster.local',
  metadata: { NAMESPACE: 'default', GENERATOR: 'envoy' },
};

test('the agent\'s socket is the only xDS server, insecure (local), xds_v3', () => {
  assert.deepEqual(buildGrpcBootstrap(input).xds_servers, [
    { server_uri: 'unix:///etc/istio/proxy/XDS', channel_creds: [{ type: 'insecure' }], server_features: ['xds_v3'] },
  ]);
});

test('the node is the proxy\'s, with GENERATOR=grpc whatever the metadata said', () => {
  const { node } = buildGrpcBootstrap(input);
  assert.equal(node.id, input.nodeId);
  assert.deepEqual(node.locality, {}, 'gRPC refuses a bootstrap whose node has no locality');
  assert.deepEqual(node.metadata, { NAMESPACE: 'default', GENERATOR: 'grpc' });
});

test('server listeners are named as istiod serves them', () => {
  assert.equal(buildGrpcBootstrap(input).server_listener_resource_name_template, 'xds.istio.io/grpc/lds/inbound/%s');
});

test('a file_watcher provider over OUTPUT_CERTS, and none without it', () => {
  assert.equal(buildGrpcBootstrap(input).certificate_providers, undefined);
  assert.deepEqual(buildGrpcBootstrap({ ...input, certDir: '/var/lib/istio/certs' }).certificate_providers, {
    default: {
      plugin_name: 'file_watcher',
      config: {
        certificate_file: '/var/lib/istio/certs/cert-chain.pem',
        private_key_file: '/var/lib/istio/certs/key.pem',
        ca_certificate_file: '/var/lib/istio/certs/root-cert.pem',
        refresh_interval: '900s',
      },
    },
  });
});

test('written whole into a 0700 directory it makes', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'grpc-bootstrap-'));
  try {
    const path = join(dir, 'etc/istio/proxy/grpc-bootstrap.json');
    await writeGrpcBootstrap(path, buildGrpcBootstrap(input));
    assert.equal((await stat(join(dir, 'etc/istio/proxy'))).mode & 0o777, 0o700);
    assert.equal((await stat(path)).mode & 0o777, 0o644);
    assert.equal(JSON.parse(await readFile(path, 'utf8')).node.id, input.nodeId);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('a GRPC_XDS_BOOTSTRAP that cannot be written is bad input naming the variable (exit 2), and leaves no temporary file', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'grpc-bootstrap-'));
  try {
    const bootstrap = buildGrpcBootstrap({ xdsSocketPath: '/etc/istio/proxy/XDS', nodeId: 'sidecar~1.2.3.4~a.b~b.svc.cluster.local', metadata: {} });
    await mkdir(join(dir, 'a-directory'));
    await writeFile(join(dir, 'a-file'), '');
    for (const path of [join(dir, 'a-directory'), join(dir, 'a-file', 'bootstrap.json')]) {
      await assert.rejects(writeGrpcBootstrap(path, bootstrap), (error: AgentError) => {
        assert.equal(error.exitCode, 2);
        assert.match(error.message, /^env GRPC_XDS_BOOTSTRAP: cannot write the gRPC bootstrap at .* \((EISDIR|ENOTDIR|EEXIST)\)$/);
        return true;
      });
    }
    assert.deepEqual((await readdir(dir)).filter((name) => name.endsWith('.tmp')), []);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('the file is 0644 and its directory 0700 whatever the umask (gRPC in another uid reads it)', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'grpc-bootstrap-'));
  const umask = process.umask(0o077);
  try {
    const path = join(dir, 'proxy/grpc-bootstrap.json');
    await writeGrpcBootstrap(path, buildGrpcBootstrap(input));
    assert.equal((await stat(path)).mode & 0o777, 0o644);
    assert.equal((await stat(join(dir, 'proxy'))).mode & 0o777, 0o700);
    assert.deepEqual(await readdir(join(dir, 'proxy')), ['grpc-bootstrap.json'], 'no temporary left beside it');
    await writeGrpcBootstrap(path, { ...buildGrpcBootstrap(input), server_listener_resource_name_template: 'second' });
    assert.equal(JSON.parse(await readFile(path, 'utf8')).server_listener_resource_name_template, 'second', 'a second write replaces the first');
    assert.match(await readFile(path, 'utf8'), /^\{\n {2}"xds_servers"[\s\S]*\}\n$/);
  } finally {
    process.umask(umask);
    await rm(dir, { recursive: true, force: true });
  }
});
