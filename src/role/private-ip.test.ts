import assert from 'node:assert/strict';
import type { NetworkInterfaceInfo } from 'node:os';
import { test } from 'node:test';
import { FakeClock } from '../shared/clock.ts';
import { excludedInterfaces, instanceIps, pickPrivateIp, waitForPrivateIp, type InterfaceTable } from './private-ip.ts';

const nic = (address: string, internal = false) => ({ address, internal, family: address.includes(':') ? 'IPv6' : 'IPv4' }) as NetworkInterfaceInfo;

test('pickPrivateIp skips loopback and link-local, unwraps mapped IPv6, prefers IPv4', () => {
  const cases: [InterfaceTable, string | undefined][] = [
    [{ lo: [nic('127.0.0.1', true)], eth0: [nic('fe80::1'), nic('10.1.2.3')] }, '10.1.2.3'],
    [{ eth0: [nic('169.254.1.1'), nic('::ffff:10.0.0.5')] }, '10.0.0.5'],
    [{ eth0: [nic('2001:db8::5')] }, '2001:db8::5'],
    [{ lo: [nic('::1', true)] }, undefined],
  ];
  for (const [table, expected] of cases) assert.equal(pickPrivateIp(table), expected);
});

test('instanceIps: the role IP first, then every private address once, loopbacks when there is none', () => {
  const cases: [string, InterfaceTable, string[]][] = [
    ['10.1.2.3', { eth0: [nic('fd00::3'), nic('10.1.2.3'), nic('10.9.9.9')], lo: [nic('127.0.0.1', true)] }, ['10.1.2.3', '10.9.9.9', 'fd00::3']],
    ['127.0.0.1', { eth0: [nic('10.9.9.9')] }, ['127.0.0.1', '10.9.9.9']],
    ['127.0.0.1', { lo: [nic('127.0.0.1', true)] }, ['127.0.0.1', '::1']],
  ];
  for (const [ip, table, expected] of cases) assert.deepEqual(instanceIps(ip, table), expected);
});

test('instanceIps: the excludeInterfaces annotation takes those interfaces\' addresses out, never the role IP, as Istio\'s agent does', () => {
  const table: InterfaceTable = { eth0: [nic('198.18.0.2'), nic('2001:2::2')], net1: [nic('198.19.0.2'), nic('2001:2:0:1::2')], lo: [nic('127.0.0.1', true)] };
  assert.deepEqual(instanceIps('198.18.0.2', table, ['net1']), ['198.18.0.2', '2001:2::2']);
  assert.deepEqual(instanceIps('198.19.0.2', table, ['net1', 'missing']), ['198.19.0.2', '198.18.0.2', '2001:2::2']);
  assert.deepEqual(instanceIps('198.18.0.2', table, ['eth0', 'net1']), ['198.18.0.2']);
  assert.deepEqual(instanceIps('198.18.0.2', table), ['198.18.0.2', '198.19.0.2', '2001:2::2', '2001:2:0:1::2']);
  assert.deepEqual(excludedInterfaces({ 'traffic.sidecar.istio.io/excludeInterfaces': 'net1,net2' }), ['net1', 'net2']);
  assert.deepEqual([excludedInterfaces({}), excludedInterfaces(undefined)], [[], []]);
});

test('waitForPrivateIp polls until an address appears, bounded', async () => {
  const clock = new FakeClock();
  let table: InterfaceTable = {};
  const found = waitForPrivateIp({ interfaces: () => table, clock, timeoutMs: 1000, intervalMs: 100 });
  clock.advance(100);
  table = { eth0: [nic('10.0.0.9')] };
  await Promise.resolve();
  clock.advance(100);
  assert.equal(await found, '10.0.0.9');

  const none = waitForPrivateIp({ interfaces: () => ({}), clock, timeoutMs: 300, intervalMs: 100 });
  for (let i = 0; i < 4; i++) {
    await Promise.resolve();
    clock.advance(100);
  }
  assert.equal(await none, undefined);
});
