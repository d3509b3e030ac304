import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Exec } from './apply.ts';
import type { CaptureConfig } from './config.ts';
import { configureRoutes, maxStaleRules, replaceRule } from './routes.ts';

/** A fake `ip`: `rule del` succeeds `stale` times (Infinity: always), then fails as ip does when none is left. */
function fakeIp(stale: number) {
  const calls: string[] = [];
  let left = stale;
  const exec: Exec = async (file, args) => {
    calls.push([file, ...args].join(' '));
    if (args[2] === 'del' && left-- <= 0) throw new Error('RTNETLINK answers: No such file or directory');
    return { stdout: '' };
  };
  return { exec, calls };
}

test('a rerun removes every stale copy of its rule, then adds it once', async () => {
  const ip = fakeIp(2);
  await replaceRule(ip.exec, '-4', '1337', '133');
  assert.deepEqual(ip.calls, [
    ...Array.from({ length: 3 }, () => 'ip -4 rule del fwmark 1337 lookup 133'),
    'ip -4 rule add fwmark 1337 lookup 133',
  ]);
});

test('an ip whose rule del always succeeds fails after a bounded number of tries, naming the rule, and adds nothing', async () => {
  const ip = fakeIp(Infinity);
  await assert.rejects(
    replaceRule(ip.exec, '-6', '1337', '133'),
    new RegExp(`^Error: ip -6 rule del fwmark 1337 lookup 133 still succeeding after ${maxStaleRules + 1} deletions`),
  );
  assert.equal(ip.calls.length, maxStaleRules + 1);
  assert.ok(ip.calls.every((call) => call.includes(' del ')));
});

test('exactly the bound of stale copies is still cleaned up', async () => {
  const ip = fakeIp(maxStaleRules);
  await replaceRule(ip.exec, '-4', '1337', '133');
  assert.equal(ip.calls.at(-1), 'ip -4 rule add fwmark 1337 lookup 133');
});

/** A fake `ip` that fails the calls `fails` matches with `message`, and records every call. */
function failingIp(fails: RegExp, message: string) {
  const calls: string[] = [];
  const exec: Exec = async (file, args) => {
    const call = [file, ...args].join(' ');
    calls.push(call);
    if (fails.test(call)) throw Object.assign(new Error('Command failed'), { stderr: `${message}\n` });
    if (args[2] === 'del') throw new Error('RTNETLINK answers: No such file or directory');
    return { stdout: '' };
  };
  return { exec, calls };
}

const tproxy = { mode: 'TPROXY', inboundPorts: '*', tproxyMark: 1337, tproxyRouteTable: 133 } as unknown as CaptureConfig;

test('TPROXY capture fails, naming the command, when ip cannot add its route or rule or delete a stale rule', async () => {
  for (const [fails, message, named] of [
    [
      /route add/,
      'RTNETLINK answers: Operation not permitted',
      /^Error: ip -4 route add local 0\.0\.0\.0\/0 dev lo table 133 failed: RTNETLINK answers: Operation not permitted$/,
    ],
    [/rule add/, 'RTNETLINK answers: Operation not permitted', /^Error: ip -4 rule add fwmark 1337 lookup 133 failed/],
    [
      /rule del/,
      'RTNETLINK answers: Operation not permitted',
      /^Error: ip -4 rule del fwmark 1337 lookup 133 failed: RTNETLINK answers: Operation not permitted$/,
    ],
  ] as const) {
    await assert.rejects(configureRoutes(tproxy, false, failingIp(fails, message).exec), named, String(fails));
  }
});

test('a rerun (route and address already there) succeeds, as Istio reruns do', async () => {
  const ip = failingIp(/route add|addr add/, 'RTNETLINK answers: File exists');
  await configureRoutes(tproxy, true, ip.exec);
  assert.equal(ip.calls.filter((call) => call.includes(' add ')).length, 5);
});

test('configureRoutes: ::6 on loopback with IPv6, and the TPROXY rule and route per family only when inbound ports are captured', async () => {
  const redirect = { ...tproxy, mode: 'REDIRECT' } as CaptureConfig;
  const addr6 = 'ip -6 addr add ::6/128 dev lo';
  const routes = (family: '-4' | '-6', any: string) => [
    `ip ${family} rule del fwmark 1337 lookup 133`,
    `ip ${family} rule add fwmark 1337 lookup 133`,
    `ip ${family} route add local ${any} dev lo table 133`,
  ];
  const cases: [CaptureConfig, boolean, string[]][] = [
    [redirect, false, []],
    [redirect, true, [addr6]],
    [{ ...tproxy, inboundPorts: [] }, false, []],
    [{ ...tproxy, inboundPorts: [] }, true, [addr6]],
    [{ ...tproxy, inboundPorts: [8080] }, false, routes('-4', '0.0.0.0/0')],
    [tproxy, true, [addr6, ...routes('-4', '0.0.0.0/0'), ...routes('-6', '::/0')]],
  ];
  for (const [config, ipv6, calls] of cases) {
    const ip = failingIp(/^$/, '');
    await configureRoutes(config, ipv6, ip.exec);
    assert.deepEqual(ip.calls, calls, JSON.stringify([config.mode, config.inboundPorts, ipv6]));
  }
});

test('a failed ip call keeps what ip said as the cause', async () => {
  const denied = failingIp(/addr add|rule add/, 'RTNETLINK answers: Operation not permitted');
  const fromAdd = await configureRoutes(tproxy, true, denied.exec).catch((error: unknown) => error);
  assert.match((fromAdd as Error & { cause: { stderr: string } }).cause.stderr, /^RTNETLINK answers: Operation not permitted/);
  const fromDel = await replaceRule(failingIp(/rule del/, 'RTNETLINK answers: Permission denied').exec, '-4', '1', '2').catch((error: unknown) => error);
  assert.match((fromDel as Error & { cause: { stderr: string } }).cause.stderr, /^RTNETLINK answers: Permission denied/);
});
