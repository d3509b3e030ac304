import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { it } from 'node:test';
import { execa } from 'execa';
import { LineLog } from './lines.ts';
import { nodeBin, repoRoot } from './paths.ts';
import { findEnvoys, listProcesses, own } from './processes.ts';

// A test process that owns a process group (a "peer") and a dir named by a fake
// Envoy outside that group, prints their pids, then waits to be killed.
const fixture = `
import { spawn } from 'node:child_process';
import { own, ownDir } from '${repoRoot}test/support/processes.ts';
const [dir] = process.argv.slice(-1);
ownDir(dir, { remove: true });
const peer = spawn('sleep', ['300'], { detached: true, stdio: 'ignore' });
own(peer, new Promise((resolve) => peer.on('exit', resolve)), 'peer');
const envoy = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)', dir], { argv0: 'envoy', detached: true, stdio: 'ignore' });
setTimeout(() => console.log(JSON.stringify({ peer: peer.pid, envoy: envoy.pid })), 300);
setInterval(() => {}, 1000);
`;

const alive = (pid: number) => listProcesses().some((info) => info.pid === pid);

async function gone(pids: number[], ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (pids.some(alive) && Date.now() < deadline) await sleep(50);
  return !pids.some(alive);
}

it(
  'a SIGKILLed test process leaves nothing: the reaper kills its owned groups and whatever names its dirs, and removes the dirs',
  { timeout: 20_000 },
  async () => {
    const dir = await mkdtemp(join(tmpdir(), 'reaper-test-'));
    // Not a test-runner child itself: no NODE_TEST_CONTEXT, so no after() hook reaps before the kill.
    const { NODE_TEST_CONTEXT: _, ...env } = process.env;
    const runner = execa(nodeBin, ['--input-type=module', '-e', fixture, dir], {
      reject: false,
      buffer: false,
      stdin: 'ignore',
      env,
      extendEnv: false,
      detached: true,
    });
    own(runner, runner, 'fixture');
    const log = new LineLog<{ peer: number; envoy: number }>(runner.stdout!);
    const { peer, envoy } = await log.waitFor(() => true, 10_000, 'the fixture to start');
    try {
      assert.deepEqual(findEnvoys({ marks: [dir] }), [envoy], 'the fake Envoy is found by its dir alone');
      runner.kill('SIGKILL');
      await runner;
      assert.ok(await gone([peer, envoy], 5000), 'the owned process and the Envoy naming the dir died with the runner');
      // The reaper removes the dirs after the kills: give it the same bound.
      const deadline = Date.now() + 5000;
      while (existsSync(dir) && Date.now() < deadline) await sleep(50);
      assert.equal(existsSync(dir), false, 'the owned dir was removed');
    } finally {
      runner.kill('SIGKILL');
      for (const pid of [peer, envoy]) if (alive(pid)) process.kill(pid, 'SIGKILL');
    }
  },
);

it('findEnvoys finds a child by its parent alone, and skips --mode validate runs', { timeout: 10_000 }, async () => {
  const idle = ['-e', 'setInterval(() => {}, 1000)'];
  const child = spawn(nodeBin, idle, { argv0: 'envoy', stdio: 'ignore' });
  const validate = spawn(nodeBin, [...idle, '--mode', 'validate'], { argv0: 'envoy', stdio: 'ignore' });
  try {
    await sleep(500);
    assert.deepEqual(findEnvoys({ parent: process.pid, marks: [] }).sort(), [child.pid].sort());
  } finally {
    child.kill('SIGKILL');
    validate.kill('SIGKILL');
  }
});
