import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildEnvoyArgs, type EnvoyArgsInput } from './args.ts';

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
