import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { access, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { before, describe, it } from 'node:test';
import { assertGone, isAlive, startAgent, type AgentOptions, type RunningAgent } from '../support/agent.ts';
import { suiteCleanup, tempDir } from '../support/cleanup.ts';
import { startPeer, type Peer } from '../support/peer.ts';
import { freePort } from '../support/ports.ts';
import { simpleHttpService } from '../support/resources.ts';
import { epochLive } from '../support/tls-rig.ts';

/** TCP ports the process listens on, from `ss` (the inspector would be 9229). */
function listeningPorts(pid: number): number[] {
  const out = execFileSync('ss', ['-ltnpH'], { encoding: 'utf8' });
  return out.split('\n').filter((line) => line.includes(`pid=${pid},`)).map((line) => Number(line.split(/\s+/)[3]!.split(':').at(-1)));
}

const exists = (path: string) => access(path).then(() => true, () => false);

describe('signals and faults on a real agent with a real Envoy', () => {
  let peer: Peer;
  const cleanup = suiteCleanup();

  before(async () => {
    peer = await startPeer(simpleHttpService({ listenerPort: await freePort(), upstreamPort: await freePort() }));
    cleanup.defer(() => peer.stop());
  });

  /** A live agent (epoch 0 LIVE); stopped and checked for leftover Envoys even when the test fails. */
  async function liveAgent(options: Partial<AgentOptions> = {}): Promise<RunningAgent> {
    const agent = await startAgent({ discoveryAddress: peer.address, ...options });
    cleanup.defer(async () => {
      // Already stopped by the test: killing an exited process is a no-op, and its dirs go.
      await agent.stop(isAlive(agent.pid) ? 'SIGTERM' : 'SIGKILL');
      await assertGone(agent.envoyPids(), 15_000);
    });
    await epochLive(agent, 0);
    return agent;
  }

  describe('started as the image starts it (the shebang)', { timeout: 90_000 }, () => {
    let agent: RunningAgent;
    before(async () => {
      agent = await liveAgent({ viaShebang: true });
    });

    it('SIGUSR1 and SIGUSR2 change nothing, and no inspector opens', async () => {
      assert.match(await readFile(`/proc/${agent.pid}/cmdline`, 'utf8'), /--disable-sigusr1/, 'node runs with --disable-sigusr1');
      const envoy = agent.envoyPids()[0]!;
      process.kill(agent.pid, 'SIGUSR1');
      process.kill(agent.pid, 'SIGUSR2');
      await agent.log.waitFor((entry) => entry.msg.startsWith('signal ignored') && entry.signal === 'SIGUSR2', 10_000, 'SIGUSR2 logged as ignored');
      await sleep(500);
      assert.ok(isAlive(agent.pid) && isAlive(envoy), 'agent and Envoy still run');
      assert.ok(!listeningPorts(agent.pid).includes(9229), `no inspector: ${listeningPorts(agent.pid).join(', ')}`);
    });

    it('SIGHUP drains and exits 0', async () => {
      const drained = agent.log.waitFor((entry) => entry.msg === 'draining listeners', 15_000, 'a drain on SIGHUP');
      const result = await agent.stop('SIGHUP');
      await drained;
      assert.equal(result.exitCode, 0, agent.stderr());
      assert.ok(agent.log.entries.some((entry) => entry.msg === 'signal received' && entry.signal === 'SIGHUP'));
    });
  });

  it('started as `node bin/pilot-agent.js` (no flag): SIGUSR1 is one log line and still opens no inspector', { timeout: 90_000 }, async () => {
    const agent = await liveAgent();
    process.kill(agent.pid, 'SIGUSR1');
    await agent.log.waitFor((entry) => entry.msg.startsWith('signal ignored') && entry.signal === 'SIGUSR1', 10_000, 'SIGUSR1 logged as ignored');
    await sleep(500);
    assert.ok(isAlive(agent.pid));
    assert.ok(!listeningPorts(agent.pid).includes(9229), `no inspector: ${listeningPorts(agent.pid).join(', ')}`);
    assert.equal((await agent.stop('SIGTERM')).exitCode, 0);
  });

  it(
    'an unhandled rejection in the running agent: one error line, Envoy stopped (no orphan, shared memory gone), listeners closed, exit 1',
    { timeout: 90_000 },
    async () => {
      const dir = await tempDir(cleanup, 'pilot-agent-fault-');
      // A preload that rejects a promise nobody handles once the test touches a file: a fault from inside the product's process.
      const trigger = join(dir, 'fault-now');
      const injector = join(dir, 'inject-fault.mjs');
      await writeFile(
        injector,
        `import { existsSync } from 'node:fs';\nconst poll = setInterval(() => { if (existsSync(${JSON.stringify(trigger)})) { clearInterval(poll); Promise.reject(new Error('injected fault')); } }, 50);\npoll.unref();\n`,
      );
      const agent = await liveAgent({ nodeArgs: ['--import', injector] });
      const baseId = Number((await readFile(join(agent.dir, 'config', 'envoy-base-id'), 'utf8')).trim());
      const sharedMemory = `/dev/shm/envoy_shared_memory_${baseId * 10}`;
      assert.ok(await exists(sharedMemory));
      const envoys = agent.envoyPids();
      await writeFile(trigger, '');
      const result = await agent.exited;
      assert.equal(result.exitCode, 1, agent.stderr());
      const faults = agent.log.entries.filter((entry) => entry.fault !== undefined);
      assert.equal(faults.length, 1, 'one line');
      assert.equal(faults[0]!.fault, 'unhandled promise rejection');
      assert.equal(faults[0]!.error, 'injected fault');
      await assertGone(envoys, 1000);
      assert.equal(await exists(sharedMemory), false, `${sharedMemory} left behind`);
      assert.equal(await exists(join(agent.dir, 'config', 'XDS')), false, 'the agent closed its listeners (the XDS socket is gone) before exiting');
    },
  );
});
