import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Command } from 'commander';
import { readNodeEnv } from '../settings/pod-env.ts';
import { mergeProxyConfigs } from '../settings/proxy-config-sources.ts';
import type { AgentConfig } from '../settings/proxy-settings.ts';
import { resolveAgentConfig } from '../settings/resolve-agent-config.ts';
import { nodeMetadata } from './node-metadata.ts';
import { proxyFlags, toOption } from '../cli/proxy-flags.ts';

function settle(args: string[], proxyConfig: Record<string, unknown>, env: Record<string, string> = {}): AgentConfig {
  const command = new Command('proxy').exitOverride().configureOutput({ writeErr: () => undefined });
  for (const spec of proxyFlags) command.addOption(toOption(spec));
  // commander reads the flags' env vars from process.env: only the row's, never the machine's (ENVOY_BIN).
  const saved = process.env;
  process.env = { ...env };
  try {
    command.parse(['--podInfoDir', '/nonexistent/pod', ...args], { from: 'user' });
  } finally {
    process.env = saved;
  }
  const commandLine = { values: command.opts(), sourceOf: (name: string) => command.getOptionValueSource(name) };
  return resolveAgentConfig({ proxyType: 'sidecar', commandLine, proxyConfig: mergeProxyConfigs([{ name: 'env PROXY_CONFIG', value: proxyConfig }]) }).config;
}

const role = { type: 'sidecar' as const, ip: '127.0.0.2', id: 'reviews-v1-abc.default', domain: 'default.svc.cluster.local' };
const podEnv = { POD_NAME: 'reviews-v1-abc', POD_NAMESPACE: 'default', SERVICE_ACCOUNT: 'reviews', PROXY_CONFIG: '{}' };

test("a default pod's node carries what Istio's agent adds: PILOT_SAN, METADATA_DISCOVERY, the socket file, skipped logs, Istio's PROXY_CONFIG", async () => {
  const metadata = await nodeMetadata(settle([], {}), role, readNodeEnv(podEnv), {}, {});
  assert.deepEqual(metadata.PILOT_SAN, ['istiod.istio-system.svc']);
  assert.equal(metadata.METADATA_DISCOVERY, 'false');
  assert.equal(metadata.WORKLOAD_IDENTITY_SOCKET_FILE, 'socket');
  assert.equal(metadata.ENVOY_SKIP_DEPRECATED_LOGS, 'true');
  const proxyConfig = metadata.PROXY_CONFIG as Record<string, unknown>;
  const istios = {
    serviceCluster: 'istio-proxy',
    drainDuration: '45s',
    terminationDrainDuration: '5s',
    proxyAdminPort: 15000,
    controlPlaneAuthPolicy: 'MUTUAL_TLS',
    discoveryAddress: 'istiod.istio-system.svc:15012',
    binaryPath: '/usr/local/bin/envoy',
    statNameLength: 189,
    statusPort: 15020,
  };
  for (const [field, want] of Object.entries(istios)) assert.deepEqual(proxyConfig[field], want, `PROXY_CONFIG.${field}`);
});

test('node metadata from settings and sources, row by row', async () => {
  const rows: [name: string, args: string[], env: Record<string, string>, merged: Record<string, unknown>, key: string, want: unknown][] = [
    ["plaintext (Istio 1.1's 15010): no PILOT_SAN", ['--discoveryAddress', 'istio-pilot:15010'], {}, {}, 'PILOT_SAN', undefined],
    [
      'plaintext: NONE is left out of PROXY_CONFIG, as protojson does',
      ['--discoveryAddress', 'istio-pilot:15010'],
      {},
      {},
      'PROXY_CONFIG.controlPlaneAuthPolicy',
      undefined,
    ],
    ['ISTIOD_SAN names istiod', [], { ISTIOD_SAN: 'istiod.mesh' }, {}, 'PILOT_SAN', ['istiod.mesh']],
    ['localhost stands for istiod', ['--discoveryAddress', 'localhost:15012'], {}, {}, 'PILOT_SAN', ['istiod.istio-system.svc']],
    ['any other host is its own SAN', ['--discoveryAddress', 'istiod-canary.istio-system.svc:15012'], {}, {}, 'PILOT_SAN', ['istiod-canary.istio-system.svc']],
    ['PEER_METADATA_DISCOVERY', [], { PEER_METADATA_DISCOVERY: '1' }, {}, 'METADATA_DISCOVERY', 'true'],
    ["ambient's HBONE turns metadata discovery on", [], { ISTIO_META_ENABLE_HBONE: 'true' }, {}, 'METADATA_DISCOVERY', 'true'],
    ['ENVOY_SKIP_DEPRECATED_LOGS=false', [], { ENVOY_SKIP_DEPRECATED_LOGS: 'false' }, {}, 'ENVOY_SKIP_DEPRECATED_LOGS', 'false'],
    ["the SDS socket's name", ['--sdsSocket', '/run/spire/agent.sock'], {}, {}, 'WORKLOAD_IDENTITY_SOCKET_FILE', 'agent.sock'],
    ['proxyMetadata ISTIO_META_* is node metadata', [], {}, { proxyMetadata: { ISTIO_META_DNS_CAPTURE: 'true', OTHER: 'x' } }, 'DNS_CAPTURE', 'true'],
    ['the env wins over proxyMetadata', [], { ISTIO_META_MESH_ID: 'env' }, { proxyMetadata: { ISTIO_META_MESH_ID: 'pc' } }, 'MESH_ID', 'env'],
    ['proxyMetadata other keys are not', [], {}, { proxyMetadata: { OTHER: 'x' } }, 'OTHER', undefined],
    [
      "the annotation's and mesh's fields reach PROXY_CONFIG",
      [],
      {},
      { holdApplicationUntilProxyStarts: true },
      'PROXY_CONFIG.holdApplicationUntilProxyStarts',
      true,
    ],
    [
      'DNS_PROXY_ADDR over ISTIO_META_DNS_PROXY_ADDR',
      [],
      { DNS_PROXY_ADDR: '127.0.0.1:15054', ISTIO_META_DNS_PROXY_ADDR: 'x' },
      {},
      'DNS_PROXY_ADDR',
      '127.0.0.1:15054',
    ],
    ["a set statNameLength wins over Istio's 189", [], {}, { statNameLength: 100 }, 'PROXY_CONFIG.statNameLength', 100],
  ];
  for (const [name, args, env, merged, key, want] of rows) {
    const metadata = await nodeMetadata(settle(args, {}, env), role, readNodeEnv({ ...podEnv, ...env }), {}, merged);
    const [outer, inner] = key.split('.') as [string, string | undefined];
    const value = inner === undefined ? metadata[outer] : (metadata[outer] as Record<string, unknown>)[inner];
    assert.deepEqual(value, want, name);
  }
});
