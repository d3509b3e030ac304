import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { systemClock } from '../shared/clock.ts';
import { findLeftoverEnvoys, stopLeftoverEnvoys } from './leftovers.ts';

/** A fake /proc: pid → [argv, parent pid, mount namespace (default: the agent's)]. */
async function fakeProc(processes: Record<number, [string[], number, string?]>): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'proc-'));
  for (const [pid, [argv, ppid, mounts = 'mnt:[1]']] of Object.entries(processes)) {
    await mkdir(join(dir, pid, 'ns'), { recursive: true });
    await writeFile(join(dir, pid, 'cmdline'), `${argv.join('\0')}\0`);
    await writeFile(join(dir, pid, 'status'), `Name:\tx\nState:\tS (sleeping)\nPPid:\t${ppid}\n`);
    await symlink(mounts, join(dir, pid, 'ns', 'mnt'));
  }
  await mkdir(join(dir, 'self'));
  return dir;
}

test("finds the orphans whose -c is a bootstrap of this --configPath in our mount namespace, not our own children, another pod's Envoy, other paths or programs", async () => {
  const procDir = await fakeProc({
    10: [['envoy', '-c', '/etc/istio/proxy/envoy-rev0.json', '--restart-epoch', '0'], 1],
    11: [['envoy', '--config-path', '/etc/istio/proxy/envoy-rev3.yaml'], 1],
    12: [['envoy', '-c', '/etc/istio/proxy/envoy-rev1.json'], 500],
    13: [['envoy', '-c', '/etc/istio/other/envoy-rev0.json'], 1],
    14: [['envoy', '-c', '/etc/istio/proxy/custom.json'], 1],
    15: [['sleep', '600'], 1],
    16: [['envoy', '-c', '/etc/istio/proxy/envoy-rev0.json'], 1, 'mnt:[2]'],
    500: [['node', 'pilot-agent'], 1],
  });
  try {
    assert.deepEqual(await findLeftoverEnvoys('/etc/istio/proxy', { procDir, selfPid: 500 }), [10, 11]);
    assert.deepEqual(await findLeftoverEnvoys('/etc/istio/none', { procDir, selfPid: 500 }), []);
  } finally {
    await rm(procDir, { recursive: true, force: true });
  }
});

test('a real orphan on the same --configPath is SIGKILLed and gone before the call returns', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'leftover-'));
  let pid = 0;
  try {
    const script = join(dir, 'fake-envoy.sh');
    await writeFile(script, 'while :; do sleep 1; done\n');
    // The outer shell exits at once: the loop is orphaned, as an Envoy is when its agent is SIGKILLed.
    const out = execFileSync('sh', ['-c', `sh ${script} -c ${join(dir, 'envoy-rev0.json')} >/dev/null 2>&1 & echo $!`], { encoding: 'utf8' });
    pid = Number(out.trim());
    assert.deepEqual(await stopLeftoverEnvoys(dir, systemClock), [pid]);
    const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => 'State:\tgone');
    assert.match(status, /^State:\s*(Z|gone)/m, 'the leftover is gone (or a zombie its new parent has yet to reap)');
    pid = 0;
  } finally {
    if (pid) process.kill(pid, 'SIGKILL');
    await rm(dir, { recursive: true, force: true });
  }
});
