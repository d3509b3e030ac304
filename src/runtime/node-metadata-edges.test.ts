import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { Command } from 'commander';
import { AgentError } from '../shared/errors.ts';
import { readNodeEnv } from '../settings/pod-env.ts';
import { mergeProxyConfigs } from '../settings/proxy-config-sources.ts';
import type { AgentConfig } from '../settings/proxy-settings.ts';
import { resolveAgentConfig } from '../settings/resolve-agent-config.ts';
import { agentProxyConfig, nodeMetadata } from './node-metadata.ts';
import { proxyFlags, toOption } from '../cli/proxy-flags.ts';
import { xdsUpstream } from './xds-upstream.ts';

const dir = await mkdtemp(join(tmpdir(), 'node-metadata-edges-'));
after(() => rm(dir, { recursive: true, force: true }));

function settle(args: string[]): AgentConfig {
  const command = new Command('proxy').exitOverride().configureOutput({ writeErr: () => undefined });
  for (const spec of proxyFlags) command.addOption(toOption(spec));
  command.parse(['--podInfoDir', join(dir, 'none'), ...args], { from: 'user' });
  const commandLine = { values: command.opts(), sourceOf: (name: string) => command.getOptionValueSource(name) };
  return resolveAgentConfig({ proxyType: 'sidecar', commandLine, proxyConfig: mergeProxyConfigs([]) }).config;
}

const role = { type: 'sidecar' as const, ip: '198.18.0.2', id: 'a.b', domain: 'b.svc.cluster.local' };

test('the ProxyConfig fields the agent decides: IPv6 discovery host bracketed, concurrency only above 0, NONE left out', () => {
  assert.equal(agentProxyConfig(settle(['--discoveryAddress', '[::1]:15012'])).discoveryAddress, '[::1]:15012');
  assert.equal(agentProxyConfig(settle(['--concurrency', '2'])).concurrency, 2);
  assert.equal('concurrency' in agentProxyConfig(settle([])), false);
  assert.equal('controlPlaneAuthPolicy' in agentProxyConfig(settle(['--discoveryAddress', 'istiod:15010'])), false);
  const config = agentProxyConfig(
    settle([
      '--configPath',
      '/cfg',
      '--binaryPath',
      '/envoy',
      '--serviceCluster',
      'c',
      '--drainDuration',
      '2s',
      '--terminationDrainDuration',
      '3s',
      '--proxyAdminPort',
      '15001',
      '--statusPort',
      '15022',
    ]),
  );
  assert.deepEqual(config, {
    configPath: '/cfg',
    binaryPath: '/envoy',
    serviceCluster: 'c',
    drainDuration: '2s',
    terminationDrainDuration: '3s',
    discoveryAddress: 'istiod.istio-system.svc:15012',
    proxyAdminPort: 15001,
    statusPort: 15022,
    controlPlaneAuthPolicy: 'MUTUAL_TLS',
  });
});

test('the node\'s ports and IPs: no status server, no readiness listener; the role\'s IP first; exitOnZeroActiveConnections', async () => {
  const off = await nodeMetadata(settle(['--statusPort', '0', '--prometheusPort', '15091', '--exitOnZeroActiveConnections']), role, readNodeEnv({}), {});
  assert.deepEqual([off.ENVOY_STATUS_PORT, off.ENVOY_PROMETHEUS_PORT, off.EXIT_ON_ZERO_ACTIVE_CONNECTIONS], [undefined, 15091, 'true']);
  const on = await nodeMetadata(settle(['--readinessPort', '15025']), role, readNodeEnv({}), {});
  assert.equal(on.ENVOY_STATUS_PORT, 15025);
  assert.equal(String(on.INSTANCE_IPS).split(',')[0], '198.18.0.2');
  assert.equal((on.PROXY_CONFIG as Record<string, unknown>).statNameLength, 189);
  assert.deepEqual((await nodeMetadata(settle(['--xdsServerName', 'istiod.mesh']), role, readNodeEnv({}), {})).PILOT_SAN, ['istiod.mesh']);
});

test('xdsUpstream: the discovery address, policy, root, certificates, server name and call metadata as settled', () => {
  const config = settle(['--discoveryAddress', 'xds.mesh:15012', '--certDir', '/certs', '--xdsServerName', 'istiod.mesh', '--xdsRootCa', '/root.pem']);
  const upstream = xdsUpstream(config, { clusterid: 'c1' });
  assert.deepEqual(upstream, {
    address: { host: 'xds.mesh', port: 15012 },
    policy: 'TLS',
    rootCaFile: '/root.pem',
    certDir: '/certs',
    serverName: 'istiod.mesh',
    tokenFile: './var/run/secrets/tokens/istio-token',
    metadata: { clusterid: 'c1' },
  });
  assert.deepEqual(xdsUpstream(config).metadata, { clusterid: '' });
});
