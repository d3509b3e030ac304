import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmod, copyFile, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { systemClock } from '../shared/clock.ts';
import { findLeftoverEnvoys, stopLeftoverEnvoys } from './leftovers.ts';

interface Row { argv: string[]; ppid: number; mounts?: string; exe?: string; uid?: number }

/** A fake /proc: pid → its row (mount namespace default the agent's, exe Istio's Envoy, every uid 1337). */
async function fakeProc(processes: Record<number, Row>): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'proc-'));
  for (const [pid, { argv, ppid, mounts = 'mnt:[1]', exe = '/usr/local/bin/envoy', uid = 1337 }] of Object.entries(processes)) {
    await mkdir(join(dir, pid, 'ns'), { recursive: true });
    await writeFile(join(dir, pid, 'cmdline'), `${argv.join('\0')}\0`);
    await writeFile(join(dir, pid, 'status'), `Name:\tx\nState:\tS (sleeping)\nPPid:\t${ppid}\nUid:\t${uid}\t${uid}\t${uid}\t${uid}\n`);
    await symlink(mounts, join(dir, pid, 'ns', 'mnt'));
    await symlink(exe, join(dir, pid, 'exe'));
  }
  await mkdir(join(dir, 'self'));
  return dir;
}

const target = { configPath: '/etc/istio/proxy', binaryPath: '/opt/envoy-1.40' };

test("finds the orphans whose -c is a bootstrap of this --configPath in our mount namespace, not our own children, another pod's Envoy, other paths or programs", async () => {
  const rev0 = ['envoy', '-c', '/etc/istio/proxy/envoy-rev0.json'];
  const procDir = await fakeProc({
    10: { argv: [...rev0, '--restart-epoch', '0'], ppid: 1 },
    11: { argv: ['envoy', '--config-path', '/etc/istio/proxy/envoy-rev3.yaml'], ppid: 1 },
    12: { argv: ['envoy', '-c', '/etc/istio/proxy/envoy-rev1.json'], ppid: 500 },
    13: { argv: ['envoy', '-c', '/etc/istio/other/envoy-rev0.json'], ppid: 1 },
    14: { argv: ['envoy', '-c', '/etc/istio/proxy/custom.json'], ppid: 1 },
    15: { argv: ['sleep', '600'], ppid: 1 },
    16: { argv: rev0, ppid: 1, mounts: 'mnt:[2]' },
    17: { argv: rev0, ppid: 1, exe: '/usr/bin/python3' },
    18: { argv: rev0, ppid: 1, uid: 0 },
    19: { argv: rev0, ppid: 1, exe: '/opt/envoy-1.40' },
    20: { argv: rev0, ppid: 1, exe: '/usr/local/bin/envoy (deleted)' },
    21: { argv: rev0, ppid: 1, exe: '/usr/local/bin/envoy-wrapper' },
    500: { argv: ['node', 'pilot-agent'], ppid: 1 },
  });
  try {
    const found = await findLeftoverEnvoys(target, { procDir, selfPid: 500, uid: 1337 });
    assert.deepEqual(found.map(({ pid }) => pid), [10, 11, 19, 20], 'not another program (17, 21) nor another uid (18) naming the path');
    assert.deepEqual(found[3], { pid: 20, exe: '/usr/local/bin/envoy (deleted)' });
    assert.deepEqual(await findLeftoverEnvoys({ ...target, configPath: '/etc/istio/none' }, { procDir, selfPid: 500, uid: 1337 }), []);
  } finally {
    await rm(procDir, { recursive: true, force: true });
  }
});

/** Starts `program script -c <dir>/envoy-rev0.json` orphaned (the outer shell exits at once), as an Envoy is when its agent is SIGKILLed. */
function orphan(dir: string, program: string, uid?: number): number {
  const command = `${program} ${join(dir, 'loop.sh')} -c ${join(dir, 'envoy-rev0.json')} >/dev/null 2>&1 & echo $!`;
  return Number(execFileSync('sh', ['-c', command], { encoding: 'utf8', uid }).trim());
}

const gone = async (pid: number) => /^State:\s*(Z|gone)/m.test(await readFile(`/proc/${pid}/status`, 'utf8').catch(() => 'State:\tgone'));

test('real processes: an orphan running a program named envoy on the same --configPath is SIGKILLed; sh naming the path, or envoy as another uid, lives', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'leftover-'));
  const pids: number[] = [];
  try {
    await chmod(dir, 0o755);
    // It ignores SIGTERM, as a hung Envoy may: only a SIGKILL ends it.
    await writeFile(join(dir, 'loop.sh'), "trap '' TERM\nwhile :; do sleep 1; done\n");
    // A copy of sh named envoy: what /proc/PID/exe then names is the Envoy binary's name.
    await copyFile('/bin/sh', join(dir, 'envoy'));
    await chmod(join(dir, 'envoy'), 0o755);
    const envoy = orphan(dir, join(dir, 'envoy'));
    const other = orphan(dir, 'sh');
    pids.push(envoy, other);
    const asRoot = process.getuid?.() === 0;
    const otherUid = asRoot ? orphan(dir, join(dir, 'envoy'), 65534) : undefined;
    if (otherUid) pids.push(otherUid);
    const killed = await stopLeftoverEnvoys({ configPath: dir, binaryPath: '/usr/local/bin/envoy' }, systemClock);
    assert.deepEqual(killed, [{ pid: envoy, exe: join(dir, 'envoy') }]);
    assert.equal(await gone(envoy), true, 'the leftover is gone (or a zombie its new parent has yet to reap)');
    assert.equal(await gone(other), false, 'sh whose argv names the config path is not Envoy');
    if (otherUid) assert.equal(await gone(otherUid), false, "a program named envoy run as another uid is not the agent's");
  } finally {
    for (const pid of pids) if (!(await gone(pid))) process.kill(pid, 'SIGKILL');
    await rm(dir, { recursive: true, force: true });
  }
});
