import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { Clock } from '../shared/clock.ts';
import { findLeftoverEnvoys, stillNamesConfigPath, stopLeftoverEnvoys } from './leftovers.ts';

interface FakeProcess { argv?: string[]; status?: string; mounts?: string; exe?: string }

/** A fake /proc from what each pid has (a missing file is left out); pid 500 is the agent unless told. */
async function fakeProc(processes: Record<number, FakeProcess>): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'proc-edges-'));
  for (const [pid, { argv, status, mounts, exe = '/usr/local/bin/envoy' }] of Object.entries(processes)) {
    await mkdir(join(dir, pid, 'ns'), { recursive: true });
    if (argv) await writeFile(join(dir, pid, 'cmdline'), `${argv.join('\0')}\0`);
    if (status !== undefined) await writeFile(join(dir, pid, 'status'), status);
    if (mounts) await symlink(mounts, join(dir, pid, 'ns', 'mnt'));
    if (exe) await symlink(exe, join(dir, pid, 'exe'));
  }
  await writeFile(join(dir, 'not-a-pid'), '');
  return dir;
}

const envoy = (path: string) => ['envoy', '-c', path];
const orphan = 'Name:\tenvoy\nState:\tS (sleeping)\nPPid:\t1\nUid:\t1337\t1337\t1337\t1337\n';
const target = { configPath: '/p', binaryPath: '/usr/local/bin/envoy' };
const view = (procDir: string) => ({ procDir, selfPid: 500, uid: 1337 });
const agent: FakeProcess = { argv: ['node'], status: 'PPid:\t1\n', mounts: 'mnt:[1]' };

test('findLeftoverEnvoys: only a process whose -c names this --configPath\'s bootstrap, whose parent is not us, in our mount namespace, of a known uid', async () => {
  const procDir = await fakeProc({
    // The agent itself, never a leftover, whatever its command line says.
    500: { ...agent, argv: envoy('/p/envoy-rev0.json'), status: orphan },
    10: { argv: envoy('/p/envoy-rev0.json'), status: orphan, mounts: 'mnt:[1]' },
    11: { argv: envoy('/p/envoy-rev0.json'), status: 'PPid:\t500\n', mounts: 'mnt:[1]' },
    12: { argv: envoy('/p/envoy-rev0.json'), status: orphan },
    13: { argv: ['envoy', '/p/envoy-rev0.json'], status: orphan, mounts: 'mnt:[1]' },
    14: { argv: ['envoy', '-c'], status: orphan, mounts: 'mnt:[1]' },
    15: { status: orphan, mounts: 'mnt:[1]' },
    16: { argv: envoy('/p/envoy-rev2.yaml'), mounts: 'mnt:[1]' },
    17: { argv: envoy('/pp/envoy-rev0.json'), status: orphan, mounts: 'mnt:[1]' },
    18: { argv: envoy('/p/envoy-rev2.yaml'), status: orphan, mounts: 'mnt:[1]' },
    19: { argv: envoy('/p/envoy-rev0.json'), status: orphan, mounts: 'mnt:[1]', exe: '' },
    20: { argv: envoy('/p/envoy-rev0.json'), status: orphan.replace(/Uid:.*/, 'Uid:\t1337\t0\t1337\t1337'), mounts: 'mnt:[1]' },
    21: { argv: envoy('/p/envoy-rev0.json'), status: orphan, mounts: 'mnt:[1]', exe: '/x/env (deleted)oy' },
    22: { argv: envoy('/p/envoy-rev0.json'), status: `Name:\tUid:\t1337\t1337\t1337\t1337\n${orphan.replace(/Uid:.*/, 'Uid:\t1000\t1000\t1000\t1000')}`, mounts: 'mnt:[1]' },
    23: { argv: ['/p/envoy-rev0.json', 'serve'], status: orphan, mounts: 'mnt:[1]' },
    24: { argv: ['-c', '/p/envoy-rev0.json'], status: orphan, mounts: 'mnt:[1]' },
    25: { argv: envoy('/p/envoy-rev0.json'), status: `Name:\tPPid:\t500\n${orphan}`, mounts: 'mnt:[1]' },
  });
  try {
    // 16 has no status (its uid unknown), 19 no exe to read, 20 an effective uid not ours, 21 only reads like a
    // replaced envoy, 22 names itself like a Uid line: none is the agent's Envoy. 23 has no -c; 24's is its first
    // argument; 25's name reads like a PPid line, its parent is 1.
    assert.deepEqual((await findLeftoverEnvoys(target, view(procDir))).map(({ pid }) => pid).sort(), [10, 18, 24, 25]);
    assert.deepEqual(await findLeftoverEnvoys(target, view(join(procDir, 'missing'))), []);
  } finally {
    await rm(procDir, { recursive: true, force: true });
  }
});

test('findLeftoverEnvoys: our own mount namespace unknown, nothing is ours to kill (neither a known one nor one as unknown as ours)', async () => {
  // No /proc/*/ns to read at all (both unknown) is no proof of one namespace: pid 11 may be another pod's Envoy.
  const procDir = await fakeProc({
    500: { argv: ['node'] },
    10: { argv: envoy('/p/envoy-rev0.json'), status: orphan, mounts: 'mnt:[1]' },
    11: { argv: envoy('/p/envoy-rev1.json'), status: orphan },
  });
  try {
    assert.deepEqual(await findLeftoverEnvoys(target, view(procDir)), []);
  } finally {
    await rm(procDir, { recursive: true, force: true });
  }
});

test('stopLeftoverEnvoys: a zombie or a pid with no /proc entry left counts as gone; one that stays is waited for 20 ms at a time, at most 5 s', async () => {
  // Pids far above any real one: process.kill finds no such process, which is "gone already".
  const rows = [
    [4_000_001, 'Z (zombie)', 0],
    // Its name reads like a zombie's State line; its State does not.
    [4_000_002, 'S (sleeping)', 250],
    // Gone at the first look after the kill: the clock's first sleep removes its /proc entry.
    [4_000_003, 'S (sleeping)', 1],
  ] as const;
  for (const [pid, state, sleeps] of rows) {
    const status = `Name:\tState: Z\nState:\t${state}\nPPid:\t1\nUid:\t1337\t1337\t1337\t1337\n`;
    const procDir = await fakeProc({ 500: agent, [pid]: { argv: envoy('/p/envoy-rev0.json'), status, mounts: 'mnt:[1]' } });
    try {
      // A clock whose sleeps end at once, counted: the wait's length without waiting it.
      const slept: number[] = [];
      const vanish = () => (sleeps === 1 ? rm(join(procDir, String(pid)), { recursive: true }) : undefined);
      const clock: Clock = { now: () => 0, sleep: async (ms) => void (slept.push(ms), await vanish()), setTimeout: () => ({ cancel: () => undefined }) };
      assert.deepEqual(await stopLeftoverEnvoys(target, clock, view(procDir)), [{ pid, exe: '/usr/local/bin/envoy' }]);
      assert.equal(slept.length, sleeps, String(pid));
      assert.ok(slept.every((ms) => ms === 20), String(pid));
    } finally {
      await rm(procDir, { recursive: true, force: true });
    }
  }
});

test('the re-check before a SIGKILL: only a command line that still names <configPath>/envoy-rev* passes', async () => {
  const procDir = await fakeProc({
    20: { argv: envoy('/p/envoy-rev3.json') },
    21: { argv: ['sleep', '600'] },
    22: { argv: envoy('/other/envoy-rev0.json') },
    24: { argv: envoy('/p/custom.json') },
  });
  try {
    const rows: [number, string, boolean][] = [
      [20, '/p', true],
      [20, '/p/', true],
      [21, '/p', false],
      [22, '/p', false],
      [23, '/p', false],
      [24, '/p', false],
    ];
    for (const [pid, configPath, expected] of rows) assert.equal(await stillNamesConfigPath(procDir, pid, configPath), expected, `pid ${pid} on ${configPath}`);
  } finally {
    await rm(procDir, { recursive: true, force: true });
  }
});
