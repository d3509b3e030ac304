import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { Clock } from '../shared/clock.ts';
import { findLeftoverEnvoys, stillNamesConfigPath, stopLeftoverEnvoys } from './leftovers.ts';

interface FakeProcess { argv?: string[]; status?: string; mounts?: string }

/** A fake /proc from what each pid has (a missing file is left out); pid 500 is the agent unless told. */
async function fakeProc(processes: Record<number, FakeProcess>): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'proc-edges-'));
  for (const [pid, { argv, status, mounts }] of Object.entries(processes)) {
    await mkdir(join(dir, pid, 'ns'), { recursive: true });
    if (argv) await writeFile(join(dir, pid, 'cmdline'), `${argv.join('\0')}\0`);
    if (status !== undefined) await writeFile(join(dir, pid, 'status'), status);
    if (mounts) await symlink(mounts, join(dir, pid, 'ns', 'mnt'));
  }
  await writeFile(join(dir, 'not-a-pid'), '');
  return dir;
}

const envoy = (path: string) => ['envoy', '-c', path];
const orphan = 'Name:\tenvoy\nState:\tS (sleeping)\nPPid:\t1\n';
const agent: FakeProcess = { argv: ['node'], status: 'PPid:\t1\n', mounts: 'mnt:[1]' };

test('findLeftoverEnvoys: only a process whose -c names this --configPath\'s bootstrap, whose parent is not us, in our mount namespace', async () => {
  const procDir = await fakeProc({
    500: agent,
    10: { argv: envoy('/p/envoy-rev0.json'), status: orphan, mounts: 'mnt:[1]' },
    11: { argv: envoy('/p/envoy-rev0.json'), status: 'PPid:\t500\n', mounts: 'mnt:[1]' },
    12: { argv: envoy('/p/envoy-rev0.json'), status: orphan },
    13: { argv: ['envoy', '/p/envoy-rev0.json'], status: orphan, mounts: 'mnt:[1]' },
    14: { argv: ['envoy', '-c'], status: orphan, mounts: 'mnt:[1]' },
    15: { status: orphan, mounts: 'mnt:[1]' },
    16: { argv: envoy('/p/envoy-rev2.yaml'), mounts: 'mnt:[1]' },
    17: { argv: envoy('/pp/envoy-rev0.json'), status: orphan, mounts: 'mnt:[1]' },
  });
  try {
    assert.deepEqual((await findLeftoverEnvoys('/p', { procDir, selfPid: 500 })).sort(), [10, 16]);
    assert.deepEqual(await findLeftoverEnvoys('/p', { procDir: join(procDir, 'missing'), selfPid: 500 }), []);
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
    assert.deepEqual(await findLeftoverEnvoys('/p', { procDir, selfPid: 500 }), []);
  } finally {
    await rm(procDir, { recursive: true, force: true });
  }
});

test('stopLeftoverEnvoys: a zombie counts as gone (no wait); one that stays is waited for 20 ms at a time, at most 5 s', async () => {
  // Pids far above any real one: process.kill finds no such process, which is "gone already".
  const zombie = 4_000_001;
  const stuck = 4_000_002;
  for (const [pid, state, sleeps] of [[zombie, 'Z (zombie)', 0], [stuck, 'S (sleeping)', 250]] as const) {
    const procDir = await fakeProc({ 500: agent, [pid]: { argv: envoy('/p/envoy-rev0.json'), status: `State:\t${state}\nPPid:\t1\n`, mounts: 'mnt:[1]' } });
    try {
      // A clock whose sleeps end at once, counted: the wait's length without waiting it.
      const slept: number[] = [];
      const clock: Clock = { now: () => 0, sleep: async (ms) => void slept.push(ms), setTimeout: () => ({ cancel: () => undefined }) };
      assert.deepEqual(await stopLeftoverEnvoys('/p', clock, { procDir, selfPid: 500 }), [pid]);
      assert.equal(slept.length, sleeps, state);
      assert.ok(slept.every((ms) => ms === 20), state);
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
  });
  try {
    const rows: [number, string, boolean][] = [
      [20, '/p', true],
      [20, '/p/', true],
      [21, '/p', false],
      [22, '/p', false],
      [23, '/p', false],
    ];
    for (const [pid, configPath, expected] of rows) assert.equal(await stillNamesConfigPath(procDir, pid, configPath), expected, `pid ${pid} on ${configPath}`);
  } finally {
    await rm(procDir, { recursive: true, force: true });
  }
});
