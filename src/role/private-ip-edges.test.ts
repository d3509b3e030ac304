import assert from 'node:assert/strict';
import type { NetworkInterfaceInfo } from 'node:os';
import { test } from 'node:test';
import { FakeClock } from '../shared/clock.ts';
import { listPrivateIps, waitForPrivateIp, type InterfaceTable } from './private-ip.ts';

const nic = (address: string, internal = false) => ({ address, internal, family: address.includes(':') ? 'IPv6' : 'IPv4' }) as NetworkInterfaceInfo;

test('listPrivateIps: internal, loopback (any 127/8, ::1) and link-local (169.254/16, fe80::/10, any case) left out; IPv4 first, each once', () => {
  const rows: [InterfaceTable, string[]][] = [
    [{ lo: [nic('198.18.0.9', true)] }, []],
    [{ eth0: [nic('127.0.0.2'), nic('::1'), nic('127.255.0.1')] }, []],
    [{ eth0: [nic('FE80::1'), nic('fe9f::1'), nic('fEa0::1'), nic('feb0::1'), nic('169.254.9.9')] }, []],
    [{ eth0: [nic('fec0::1'), nic('169.255.0.1'), nic('2001:2::1'), nic('128.0.0.1')] }, ['169.255.0.1', '128.0.0.1', 'fec0::1', '2001:2::1']],
    [
      { eth0: [nic('::FFFF:198.18.0.5'), nic('198.18.0.5')], eth1: [nic('198.18.0.5'), nic('2001:2::1'), nic('2001:2::1')], none: undefined },
      ['198.18.0.5', '2001:2::1'],
    ],
    [{ eth0: [nic('::ffff:169.254.0.1'), nic('::ffff:127.0.0.1')] }, []],
    [{ eth0: [nic('x::ffff:198.18.0.5')] }, ['x::ffff:198.18.0.5']],
    [{ eth0: [nic('::ffff:198.18.10.55'), nic('2001:2::fe80'), nic('::ffff:198.18.0.5:1')] }, ['198.18.10.55', '2001:2::fe80', '::ffff:198.18.0.5:1']],
  ];
  for (const [table, want] of rows) assert.deepEqual(listPrivateIps(table), want, JSON.stringify(table));
});

test('waitForPrivateIp looks once at start, then every interval, and a last time at the deadline', async () => {
  const clock = new FakeClock();
  let looks = 0;
  const none = waitForPrivateIp({ interfaces: () => (looks++, {}), clock, timeoutMs: 300, intervalMs: 100 });
  for (let i = 0; i < 6; i++) {
    await Promise.resolve();
    clock.advance(100);
  }
  assert.equal(await none, undefined);
  assert.equal(looks, 4, 'at 0, 100, 200 and 300 ms');
  let first = 0;
  assert.equal(await waitForPrivateIp({ interfaces: () => (first++, { eth0: [nic('198.18.0.1')] }), clock, timeoutMs: 0, intervalMs: 100 }), '198.18.0.1');
  assert.equal(first, 1);
});
