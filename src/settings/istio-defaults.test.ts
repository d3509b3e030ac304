import assert from 'node:assert/strict';
import { resolve } from 'node:path';
import { test } from 'node:test';
import { Command } from 'commander';
import { proxyFlags, toOption } from '../cli/proxy-flags.ts';
import type { AgentConfig } from './proxy-settings.ts';
import { mergeProxyConfigs } from './proxy-config-sources.ts';
import { resolveAgentConfig } from './resolve-agent-config.ts';

/** The config of `pilot-agent proxy sidecar <args>` with one PROXY_CONFIG source (Istio's injector renders `{}`). */
function settle(args: string[], proxyConfig: Record<string, unknown> = {}): AgentConfig {
  const command = new Command('proxy').exitOverride().configureOutput({ writeErr: () => undefined });
  for (const spec of proxyFlags) command.addOption(toOption(spec));
  // commander reads the flags' env vars from process.env: none of the machine's (ENVOY_BIN) may reach a default.
  const saved = process.env;
  process.env = {};
  try {
    command.parse(args, { from: 'user' });
  } finally {
    process.env = saved;
  }
  const commandLine = { values: command.opts(), sourceOf: (name: string) => command.getOptionValueSource(name) };
  return resolveAgentConfig({ proxyType: 'sidecar', commandLine, proxyConfig: mergeProxyConfigs([{ name: 'env PROXY_CONFIG', value: proxyConfig }]) }).config;
}

/** Every field of Istio's DefaultProxyConfig (pkg/config/mesh/mesh.go) and what ours settles on with nothing set. */
const istioDefaults: [field: string, ours: (config: AgentConfig) => unknown, want: unknown][] = [
  // Istio's /etc/istio/proxy, against the working directory (/ in a pod), as Istio's relative constant is.
  ['configPath', (config) => config.configPath, resolve('etc/istio/proxy')],
  ['serviceCluster', (config) => config.serviceCluster, 'istio-proxy'],
  ['drainDuration', (config) => config.drainDurationMs, 45_000],
  ['terminationDrainDuration', (config) => config.terminationDrainDurationMs, 5_000],
  ['proxyAdminPort', (config) => config.proxyAdminPort, 15000],
  ['controlPlaneAuthPolicy', (config) => config.controlPlaneAuthPolicy, 'MUTUAL_TLS'],
  ['discoveryAddress', (config) => config.discoveryAddress, { host: 'istiod.istio-system.svc', port: 15012 }],
  ['binaryPath', (config) => config.binaryPath, '/usr/local/bin/envoy'],
  ['statusPort', (config) => config.statusPort, 15020],
];

test('with PROXY_CONFIG={} and no flags, every ProxyConfig default is Istio\'s DefaultProxyConfig', () => {
  const config = settle([]);
  for (const [field, ours, want] of istioDefaults) assert.deepEqual(ours(config), want, field);
  assert.equal(config.controlPlaneAuthPolicyGiven, false, 'the default, not a given policy');
});

test('Istio 1.1\'s explicit flags and ProxyConfig fields still win over the defaults', () => {
  const rows: [args: string[], proxyConfig: Record<string, unknown>, field: keyof AgentConfig, want: unknown][] = [
    [['--discoveryAddress', 'istio-pilot:15010'], {}, 'discoveryAddress', { host: 'istio-pilot', port: 15010 }],
    [['--controlPlaneAuthPolicy', 'NONE'], {}, 'controlPlaneAuthPolicy', 'NONE'],
    [['--controlPlaneAuthPolicy', 'MUTUAL_TLS'], {}, 'controlPlaneAuthPolicyGiven', true],
    [[], { controlPlaneAuthPolicy: 'MUTUAL_TLS' }, 'controlPlaneAuthPolicyGiven', true],
    [[], { discoveryAddress: 'istiod.other.svc:15012' }, 'discoveryAddress', { host: 'istiod.other.svc', port: 15012 }],
  ];
  for (const [args, proxyConfig, field, want] of rows)
    assert.deepEqual(settle(args, proxyConfig)[field], want, `${args.join(' ')} ${JSON.stringify(proxyConfig)}`);
});
