import assert from 'node:assert/strict';
import { resolve } from 'node:path';
import { describe, it } from 'node:test';
import { Command } from 'commander';
import { checkResolvedConfig } from '../cli/preflight.ts';
import { proxyFlags, toOption } from '../cli/proxy-flags.ts';
import type { AgentConfig } from './proxy-settings.ts';
import { mergeProxyConfigs } from './proxy-config-sources.ts';
import { resolveAgentConfig } from './resolve-agent-config.ts';

interface Inputs {
  args?: string[];
  env?: Record<string, string>;
  /** One PROXY_CONFIG source. */
  proxyConfig?: Record<string, unknown>;
}

/** The proxy command's path from argv, env and ProxyConfig to the typed config; the error line when it refuses. */
function settle(inputs: Inputs): AgentConfig | string {
  const command = new Command('proxy').exitOverride().configureOutput({ writeErr: () => undefined });
  for (const spec of proxyFlags) command.addOption(toOption(spec));
  const saved = process.env;
  // Only the row's env: a variable set where the tests run (ENVOY_BIN, which the README offers) must not change a row.
  process.env = { ...inputs.env };
  try {
    command.parse(inputs.args ?? [], { from: 'user' });
    const commandLine = { values: command.opts(), sourceOf: (name: string) => command.getOptionValueSource(name) };
    const proxyConfig = mergeProxyConfigs(inputs.proxyConfig ? [{ name: 'env PROXY_CONFIG', value: inputs.proxyConfig }] : []);
    return checkResolvedConfig(resolveAgentConfig({ proxyType: 'sidecar', commandLine, proxyConfig, env: process.env }).config);
  } catch (error) {
    return (error as Error).message;
  } finally {
    process.env = saved;
  }
}

type Row = Inputs & { name: string; field: keyof AgentConfig; want: unknown };

const rows: Row[] = [
  { name: 'ISTIO_CPU_LIMIT: unset, Envoy decides', field: 'concurrency', want: 0 },
  { name: 'ISTIO_CPU_LIMIT sets the workers', env: { ISTIO_CPU_LIMIT: '2' }, field: 'concurrency', want: 2 },
  { name: 'ISTIO_CPU_LIMIT is rounded up', env: { ISTIO_CPU_LIMIT: '1.2' }, field: 'concurrency', want: 2 },
  { name: 'ISTIO_CPU_LIMIT in millicores is rounded up', env: { ISTIO_CPU_LIMIT: '500m' }, field: 'concurrency', want: 1 },
  { name: 'ISTIO_CPU_LIMIT past the most workers is clamped', env: { ISTIO_CPU_LIMIT: '4096' }, field: 'concurrency', want: 512 },
  { name: 'ISTIO_CPU_LIMIT 0 is no limit', env: { ISTIO_CPU_LIMIT: '0' }, field: 'concurrency', want: 0 },
  { name: 'ProxyConfig concurrency beats ISTIO_CPU_LIMIT', env: { ISTIO_CPU_LIMIT: '2' }, proxyConfig: { concurrency: 3 }, field: 'concurrency', want: 3 },
  {
    name: 'ProxyConfig concurrency 0 also beats ISTIO_CPU_LIMIT',
    env: { ISTIO_CPU_LIMIT: '2' },
    proxyConfig: { concurrency: 0 },
    field: 'concurrency',
    want: 0,
  },
  { name: 'the --concurrency flag beats ISTIO_CPU_LIMIT', args: ['--concurrency', '4'], env: { ISTIO_CPU_LIMIT: '2' }, field: 'concurrency', want: 4 },
  { name: 'fileFlushInterval: the default 1s', field: 'fileFlushIntervalMs', want: 1000 },
  { name: 'ProxyConfig fileFlushInterval', proxyConfig: { fileFlushInterval: '0.250s' }, field: 'fileFlushIntervalMs', want: 250 },
  { name: 'ENVOY_SKIP_DEPRECATED_LOGS: on by default, as in Istio', field: 'skipDeprecatedLogs', want: true },
  { name: 'ENVOY_SKIP_DEPRECATED_LOGS=false', env: { ENVOY_SKIP_DEPRECATED_LOGS: 'false' }, field: 'skipDeprecatedLogs', want: false },
  { name: 'ISTIO_BOOTSTRAP_OVERRIDE: unset is none', field: 'bootstrapOverride', want: undefined },
  {
    name: 'ISTIO_BOOTSTRAP_OVERRIDE names the file',
    env: { ISTIO_BOOTSTRAP_OVERRIDE: '/etc/istio/custom-bootstrap/custom_bootstrap.json' },
    field: 'bootstrapOverride',
    want: '/etc/istio/custom-bootstrap/custom_bootstrap.json',
  },
  { name: '--proxyAdminPort left at its default is not given', field: 'proxyAdminPortGiven', want: false },
  {
    name: '--proxyAdminPort on the command line is given, even at the default value',
    args: ['--proxyAdminPort', '15000'],
    field: 'proxyAdminPortGiven',
    want: true,
  },
  { name: 'ProxyConfig proxyAdminPort is given', proxyConfig: { proxyAdminPort: 15000 }, field: 'proxyAdminPortGiven', want: true },
  { name: 'ISTIO_BOOTSTRAP: unset is no template', field: 'templateFile', want: undefined },
  { name: 'ISTIO_BOOTSTRAP sets the template', env: { ISTIO_BOOTSTRAP: '/env.json' }, field: 'templateFile', want: '/env.json' },
  {
    name: 'ISTIO_BOOTSTRAP: the flag beats it',
    args: ['--templateFile', '/flag.json'],
    env: { ISTIO_BOOTSTRAP: '/env.json' },
    field: 'templateFile',
    want: '/flag.json',
  },
  {
    name: 'ISTIO_BOOTSTRAP beats ProxyConfig',
    env: { ISTIO_BOOTSTRAP: '/env.json' },
    proxyConfig: { proxyBootstrapTemplatePath: '/pc.json' },
    field: 'templateFile',
    want: '/env.json',
  },
  {
    name: 'ProxyConfig proxyBootstrapTemplatePath beats the default',
    proxyConfig: { proxyBootstrapTemplatePath: '/pc.json' },
    field: 'templateFile',
    want: '/pc.json',
  },
  { name: 'CERT_DIR: the default, Istio ./etc/certs, against the working directory', field: 'certDir', want: resolve('etc/certs') },
  { name: 'a relative CERT_DIR resolves against the working directory too', env: { CERT_DIR: 'certs' }, field: 'certDir', want: resolve('certs') },
  { name: 'CERT_DIR sets it', env: { CERT_DIR: '/env/certs' }, field: 'certDir', want: '/env/certs' },
  { name: 'CERT_DIR: the flag beats it', args: ['--certDir', '/flag/certs'], env: { CERT_DIR: '/env/certs' }, field: 'certDir', want: '/flag/certs' },
  { name: 'TERMINATION_DRAIN_DURATION_SECONDS: the default 5s', field: 'terminationDrainDurationMs', want: 5000 },
  {
    name: 'TERMINATION_DRAIN_DURATION_SECONDS is whole seconds',
    env: { TERMINATION_DRAIN_DURATION_SECONDS: '9' },
    field: 'terminationDrainDurationMs',
    want: 9000,
  },
  {
    name: 'TERMINATION_DRAIN_DURATION_SECONDS also takes a duration',
    env: { TERMINATION_DRAIN_DURATION_SECONDS: '1m' },
    field: 'terminationDrainDurationMs',
    want: 60_000,
  },
  {
    name: 'TERMINATION_DRAIN_DURATION_SECONDS: the flag beats it',
    args: ['--terminationDrainDuration', '3s'],
    env: { TERMINATION_DRAIN_DURATION_SECONDS: '9' },
    field: 'terminationDrainDurationMs',
    want: 3000,
  },
  {
    name: 'TERMINATION_DRAIN_DURATION_SECONDS beats ProxyConfig',
    env: { TERMINATION_DRAIN_DURATION_SECONDS: '9' },
    proxyConfig: { terminationDrainDuration: '20s' },
    field: 'terminationDrainDurationMs',
    want: 9000,
  },
  {
    name: 'ProxyConfig terminationDrainDuration beats the default',
    proxyConfig: { terminationDrainDuration: '20s' },
    field: 'terminationDrainDurationMs',
    want: 20_000,
  },
  { name: 'the flag takes whole seconds too', args: ['--terminationDrainDuration', '20'], field: 'terminationDrainDurationMs', want: 20_000 },
  { name: 'MINIMUM_DRAIN_DURATION: the default 5s', field: 'minimumDrainDurationMs', want: 5000 },
  { name: 'MINIMUM_DRAIN_DURATION is a Go duration', env: { MINIMUM_DRAIN_DURATION: '1m30s' }, field: 'minimumDrainDurationMs', want: 90_000 },
  {
    name: 'MINIMUM_DRAIN_DURATION: the flag beats it',
    args: ['--minimumDrainDuration', '2s'],
    env: { MINIMUM_DRAIN_DURATION: '1m' },
    field: 'minimumDrainDurationMs',
    want: 2000,
  },
  {
    name: 'with the flag given, its env var is not even read',
    args: ['--minimumDrainDuration', '2s'],
    env: { MINIMUM_DRAIN_DURATION: 'soon' },
    field: 'minimumDrainDurationMs',
    want: 2000,
  },
  { name: 'ENVOY_BIN sets the binary', env: { ENVOY_BIN: '/env/envoy' }, field: 'binaryPath', want: '/env/envoy' },
  {
    name: 'ENVOY_BIN beats ProxyConfig binaryPath',
    env: { ENVOY_BIN: '/env/envoy' },
    proxyConfig: { binaryPath: '/pc/envoy' },
    field: 'binaryPath',
    want: '/env/envoy',
  },
  { name: 'ProxyConfig binaryPath beats the default', proxyConfig: { binaryPath: '/pc/envoy' }, field: 'binaryPath', want: '/pc/envoy' },
  { name: 'the binary default', field: 'binaryPath', want: '/usr/local/bin/envoy' },
  { name: 'a flag beats ProxyConfig', args: ['--drainDuration', '3s'], proxyConfig: { drainDuration: '20s' }, field: 'drainDurationMs', want: 3000 },
  { name: 'ISTIO_DELTA_XDS', env: { ISTIO_DELTA_XDS: 'false' }, field: 'deltaXds', want: false },
  { name: 'EXIT_ON_ZERO_ACTIVE_CONNECTIONS', env: { EXIT_ON_ZERO_ACTIVE_CONNECTIONS: '1' }, field: 'exitOnZeroActiveConnections', want: true },
  { name: 'INGRESS_CERT_DIR', env: { INGRESS_CERT_DIR: '/env/ingress' }, field: 'ingressCertDir', want: '/env/ingress' },
  { name: 'ISTIOD_SAN', env: { ISTIOD_SAN: 'istiod.corp' }, field: 'xdsServerName', want: 'istiod.corp' },
  { name: 'XDS_ROOT_CA', env: { XDS_ROOT_CA: '/env/root.pem' }, field: 'xdsRootCa', want: '/env/root.pem' },
  {
    name: 'ProxyConfig discoveryAddress as host and port',
    proxyConfig: { discoveryAddress: 'istiod.istio-system.svc:15012' },
    field: 'discoveryAddress',
    want: { host: 'istiod.istio-system.svc', port: 15012 },
  },
];

describe('a setting from the command line beats its env var, which beats ProxyConfig, which beats the default', () => {
  for (const row of rows) {
    it(row.name, () => {
      const config = settle(row);
      assert.ok(typeof config !== 'string', config as string);
      assert.deepEqual(config[row.field], row.want);
    });
  }
});

const refused: (Inputs & { name: string; line: RegExp })[] = [
  { name: 'ISTIO_CPU_LIMIT that is no CPU count', env: { ISTIO_CPU_LIMIT: 'two' }, line: /^env ISTIO_CPU_LIMIT: "two" is not a CPU count/ },
  {
    name: 'ENVOY_SKIP_DEPRECATED_LOGS that is no boolean',
    env: { ENVOY_SKIP_DEPRECATED_LOGS: 'maybe' },
    line: /'maybe'.*env 'ENVOY_SKIP_DEPRECATED_LOGS'.*not a boolean/,
  },
  {
    name: 'TERMINATION_DRAIN_DURATION_SECONDS that is no number of seconds',
    env: { TERMINATION_DRAIN_DURATION_SECONDS: '1.5' },
    line: /--terminationDrainDuration.*'1\.5'.*env 'TERMINATION_DRAIN_DURATION_SECONDS'.*not a Go duration/,
  },
  {
    name: 'TERMINATION_DRAIN_DURATION_SECONDS past the longest timer',
    env: { TERMINATION_DRAIN_DURATION_SECONDS: '3000000' },
    line: /'3000000'.*env 'TERMINATION_DRAIN_DURATION_SECONDS'.*must be at most/,
  },
  {
    name: 'MINIMUM_DRAIN_DURATION without a unit',
    env: { MINIMUM_DRAIN_DURATION: '10' },
    line: /--minimumDrainDuration.*'10'.*env 'MINIMUM_DRAIN_DURATION'.*not a Go duration/,
  },
  { name: 'ISTIO_DELTA_XDS that is no boolean', env: { ISTIO_DELTA_XDS: 'maybe' }, line: /--deltaXds.*'maybe'.*env 'ISTIO_DELTA_XDS'.*not a boolean/ },
  {
    name: 'EXIT_ON_ZERO_ACTIVE_CONNECTIONS that is no boolean',
    env: { EXIT_ON_ZERO_ACTIVE_CONNECTIONS: 'yes' },
    line: /'yes'.*env 'EXIT_ON_ZERO_ACTIVE_CONNECTIONS'.*not a boolean/,
  },
];

describe('a bad env value is refused naming the env var', () => {
  for (const row of refused) {
    it(row.name, () => {
      const result = settle(row);
      assert.equal(typeof result, 'string', `accepted: ${JSON.stringify(row.env)}`);
      assert.match(result as string, row.line);
    });
  }
});
