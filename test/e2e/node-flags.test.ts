/**
 * The Node flags and variables the image starts the agent with (the shebang
 * of bin/pilot-agent.js; bench/cost.ts measured them, docs/benchmarks.md has
 * the menu): a real agent with a real Envoy, started through the shebang.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { before, describe, it } from 'node:test';
import { assertGone, isAlive, startAgent } from '../support/agent.ts';
import { suiteCleanup } from '../support/cleanup.ts';
import { startPeer, type Peer } from '../support/peer.ts';
import { freePort } from '../support/ports.ts';
import { simpleHttpService } from '../support/resources.ts';
import { epochLive } from '../support/tls-rig.ts';
import { agentBin } from '../support/paths.ts';

const threads = async (pid: number) => Number(/^Threads:\s+(\d+)/m.exec(await readFile(`/proc/${pid}/status`, 'utf8'))?.[1]);

describe('the Node flags of the image', () => {
  let peer: Peer;
  const cleanup = suiteCleanup();

  before(async () => {
    peer = await startPeer(simpleHttpService({ listenerPort: await freePort(), upstreamPort: await freePort() }));
    cleanup.defer(() => peer.stop());
  });

  it('the shebang line fits the 127 characters a kernel before 5.1 reads of it (it cuts the rest), and its interpreter exists', async () => {
    const line = (await readFile(agentBin, 'utf8')).split('\n')[0]!;
    assert.ok(line.length <= 127, `${line.length} characters: ${line}`);
    assert.ok(existsSync(line.slice(2).split(' ')[0]!), line);
  });

  it(
    'started through the shebang, a live agent runs with a 1 MB semi-space, one V8 worker, optimizing on the main thread and two malloc arenas: at most 7 threads (10 without)',
    { timeout: 90_000 },
    async () => {
      const agent = await startAgent({ discoveryAddress: peer.address, viaShebang: true });
      cleanup.defer(async () => {
        await agent.stop(isAlive(agent.pid) ? 'SIGTERM' : 'SIGKILL');
        await assertGone(agent.envoyPids(), 15_000);
      });
      await epochLive(agent, 0);
      const argv = (await readFile(`/proc/${agent.pid}/cmdline`, 'utf8')).split('\0');
      for (const flag of ['--disable-sigusr1', '--max-semi-space-size=1', '--v8-pool-size=1', '--no-concurrent-recompilation'])
        assert.ok(argv.includes(flag), `node runs with ${flag}: ${argv.join(' ')}`);
      const env = (await readFile(`/proc/${agent.pid}/environ`, 'utf8')).split('\0');
      assert.ok(env.includes('MALLOC_ARENA_MAX=2'), "the agent's env has MALLOC_ARENA_MAX=2");
      assert.ok((await threads(agent.pid)) <= 7, `at most 7 threads, not ${await threads(agent.pid)}`);
    },
  );
});
