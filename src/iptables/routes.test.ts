import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Exec } from './apply.ts';
import { maxStaleRules, replaceRule } from './routes.ts';

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
  await assert.rejects(replaceRule(ip.exec, '-6', '1337', '133'), new RegExp(`^Error: ip -6 rule del fwmark 1337 lookup 133 still succeeding after ${maxStaleRules + 1} deletions`));
  assert.equal(ip.calls.length, maxStaleRules + 1);
  assert.ok(ip.calls.every((call) => call.includes(' del ')));
});

test('exactly the bound of stale copies is still cleaned up', async () => {
  const ip = fakeIp(maxStaleRules);
  await replaceRule(ip.exec, '-4', '1337', '133');
  assert.equal(ip.calls.at(-1), 'ip -4 rule add fwmark 1337 lookup 133');
});
