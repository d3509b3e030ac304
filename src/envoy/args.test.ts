import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildEnvoyArgs, localAddressIpVersion, validationArgs, type EnvoyArgsInput } from './args.ts';

const input: EnvoyArgsInput = {
  bootstrapPath: '/etc/istio/proxy/envoy-rev0.json',
  epoch: 0,
  baseIdPath: '/etc/istio/proxy/envoy-base-id',
  drainDurationMs: 45_000,
  parentShutdownDurationMs: 60_000,
  serviceCluster: 'istio-proxy',
  serviceNode: 'sidecar~10.1.2.3~a.b~b.svc.cluster.local',
  logLevel: 'warning',
  componentLogLevel: '',
  concurrency: 0,
  fileFlushIntervalMs: 1000,
  skipDeprecatedLogs: true,
  launch: { localAddressIpVersion: 'v4' },
};

const flagValue = (args: string[], flag: string) => args[args.indexOf(flag) + 1];

test('epoch 0 lets Envoy pick a free base id; later epochs reuse it', () => {
  const first = buildEnvoyArgs(input);
  assert.ok(first.includes('--use-dynamic-base-id'));
  assert.equal(flagValue(first, '--base-id-path'), input.baseIdPath);
  const second = buildEnvoyArgs({ ...input, epoch: 1, baseId: 42 });
  assert.equal(flagValue(second, '--restart-epoch'), '1');
  assert.equal(flagValue(second, '--base-id'), '42');
  assert.ok(!second.includes('--use-dynamic-base-id'));
});

test('durations are whole seconds and optional flags appear only when set', () => {
  const args = buildEnvoyArgs({ ...input, drainDurationMs: 1500, logLevel: 'warn', componentLogLevel: 'upstream:debug', concurrency: 2 });
  assert.equal(flagValue(args, '--drain-time-s'), '2');
  assert.equal(flagValue(args, '--parent-shutdown-time-s'), '60');
  assert.equal(flagValue(args, '-l'), 'warning');
  assert.equal(flagValue(args, '--component-log-level'), 'upstream:debug');
  assert.equal(flagValue(args, '--concurrency'), '2');
  assert.ok(!buildEnvoyArgs(input).includes('--concurrency'));
});

test('no flag removed from Envoy 1.40 is passed', () => {
  const args = buildEnvoyArgs(input);
  for (const removed of ['--max-obj-name-len', '--max-stats', '--v2-config-only', '--allow-unknown-fields']) {
    assert.ok(!args.includes(removed), removed);
  }
  assert.ok(args.includes('--allow-unknown-static-fields'));
});

test('access logs are flushed every fileFlushInterval (Istio: 1s, Envoy alone: 10s)', () => {
  assert.equal(flagValue(buildEnvoyArgs(input), '--file-flush-interval-msec'), '1000');
  assert.equal(flagValue(buildEnvoyArgs({ ...input, fileFlushIntervalMs: 250 }), '--file-flush-interval-msec'), '250');
});

test('deprecation log lines are skipped unless ENVOY_SKIP_DEPRECATED_LOGS=false', () => {
  assert.ok(buildEnvoyArgs(input).includes('--skip-deprecated-logs'));
  assert.ok(!buildEnvoyArgs({ ...input, skipDeprecatedLogs: false }).includes('--skip-deprecated-logs'));
});

test('local addresses are IPv6 only when every node IP is IPv6', () => {
  const cases: [string[], 'v4' | 'v6'][] = [
    [['10.1.2.3'], 'v4'],
    [['fd00::1'], 'v6'],
    [['fd00::1', '2001:db8::7'], 'v6'],
    [['10.1.2.3', 'fd00::1'], 'v4'],
    [['fd00::1', '10.1.2.3'], 'v4'],
    [[], 'v4'],
  ];
  for (const [ips, want] of cases) assert.equal(localAddressIpVersion(ips), want, ips.join(','));
  const args = buildEnvoyArgs({ ...input, launch: { localAddressIpVersion: 'v6' } });
  assert.equal(flagValue(args, '--local-address-ip-version'), 'v6');
});

test('ISTIO_ENVOY_ENABLE_CORE_DUMP passes --enable-core-dump, as Istio\'s agent does; never otherwise', () => {
  assert.ok(buildEnvoyArgs({ ...input, launch: { localAddressIpVersion: 'v4', enableCoreDump: true } }).includes('--enable-core-dump'));
  assert.ok(!buildEnvoyArgs(input).includes('--enable-core-dump'));
  // Nothing else comes or goes with it: the command line without is the one with, less that flag.
  const withDump = buildEnvoyArgs({ ...input, launch: { localAddressIpVersion: 'v4', enableCoreDump: true } });
  assert.deepEqual(buildEnvoyArgs(input), withDump.filter((arg) => arg !== '--enable-core-dump'));
});

test('ProxyConfig fileFlushMinSizeKb passes --file-flush-min-size-kb, as Istio\'s agent does; not when unset', () => {
  assert.equal(flagValue(buildEnvoyArgs({ ...input, launch: { localAddressIpVersion: 'v4', fileFlushMinSizeKb: 64 } }), '--file-flush-min-size-kb'), '64');
  assert.ok(!buildEnvoyArgs(input).includes('--file-flush-min-size-kb'));
  const withMin = buildEnvoyArgs({ ...input, launch: { localAddressIpVersion: 'v4', fileFlushMinSizeKb: 64 } });
  const at = withMin.indexOf('--file-flush-min-size-kb');
  assert.deepEqual(buildEnvoyArgs(input), [...withMin.slice(0, at), ...withMin.slice(at + 2)]);
});

test('the bootstrap override reaches Envoy and its validation as --config-yaml', () => {
  const configYaml = '{"stats_flush_interval":"7s"}';
  const launch = { localAddressIpVersion: 'v4' as const, configYaml };
  assert.equal(flagValue(buildEnvoyArgs({ ...input, launch }), '--config-yaml'), configYaml);
  assert.equal(flagValue(validationArgs({ proxyComponentLogLevel: '', concurrency: 0 }, launch), '--config-yaml'), configYaml);
  assert.ok(!buildEnvoyArgs(input).includes('--config-yaml'));
});

test('the whole command line, flag by flag, in order: no flag or value dropped, emptied or added', () => {
  const args = buildEnvoyArgs({ ...input, logLevel: 'debug', skipDeprecatedLogs: false });
  assert.deepEqual(args, [
    '-c', '/etc/istio/proxy/envoy-rev0.json',
    '--restart-epoch', '0',
    '--use-dynamic-base-id', '--base-id-path', '/etc/istio/proxy/envoy-base-id',
    '--drain-time-s', '45',
    '--parent-shutdown-time-s', '60',
    '--drain-strategy', 'immediate',
    '--service-cluster', 'istio-proxy',
    '--service-node', 'sidecar~10.1.2.3~a.b~b.svc.cluster.local',
    '--local-address-ip-version', 'v4',
    '--file-flush-interval-msec', '1000',
    '--allow-unknown-static-fields',
    '-l', 'debug',
  ]);
  // Without a launch (an EnvoyProxy given none: its validate run), only the settings' flags.
  assert.deepEqual(validationArgs({ proxyComponentLogLevel: '', concurrency: 0 }), []);
  assert.deepEqual(validationArgs({ proxyComponentLogLevel: 'misc:error', concurrency: 1 }), ['--component-log-level', 'misc:error', '--concurrency', '1']);
});
