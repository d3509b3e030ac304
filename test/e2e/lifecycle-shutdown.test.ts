import assert from 'node:assert/strict';
import { basename } from 'node:path';
import { it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { adminClient, serverInfo } from '../../src/envoy/admin.ts';
import { assertGone } from '../support/agent.ts';
import { epochLive, parentPid, startTlsRig } from '../support/tls-rig.ts';

it(
  'SIGTERM 200-250 ms after a cert write: the epoch that takes over during the drain is drained too, for the whole drain, then all stop',
  { timeout: 90_000 },
  async (t) => {
    // The parent leaves 2 s after the child took over: in the middle of the 6 s drain.
    const rig = await startTlsRig(['--terminationDrainDuration', '6s', '--parentShutdownDuration', '2s']);
    try {
      await epochLive(rig.agent, 0);
      const agentPid = await parentPid(rig.agent.envoyPids()[0]!);
      const from = rig.agent.log.entries.length;
      const written = Date.now();
      await rig.rotate();
      await rig.agent.log.waitFor((entry) => entry.msg === 'starting epoch' && entry.epoch === 1, 5000, 'epoch 1 to start', from);
      await sleep(Math.max(0, 225 - (Date.now() - written)));
      const signalled = Date.now();
      process.kill(agentPid, 'SIGTERM');
      const liveBefore = rig.agent.log.entries.some((entry) => entry.msg === 'epoch live' && entry.epoch === 1);
      t.diagnostic(`SIGTERM ${signalled - written} ms after the write; epoch 1 LIVE before it: ${liveBefore}`);

      // Until the drain is over, whatever answers on admin must be draining once the calls had time to land.
      const admin = adminClient(rig.agent.adminPort);
      const seen = new Map<string, string[]>();
      let lastAnswer = 0;
      while (Date.now() - signalled < 5500) {
        const info = await serverInfo(admin);
        if (info) lastAnswer = Date.now() - signalled;
        if (info && Date.now() - signalled > 2500) seen.set(basename(info.configPath), [...(seen.get(basename(info.configPath)) ?? []), info.state]);
        await sleep(100);
      }
      t.diagnostic(JSON.stringify(Object.fromEntries([...seen].map(([path, states]) => [path, [...new Set(states)]]))));
      assert.ok(seen.has('envoy-rev1.json'), 'epoch 1 took over during the drain');
      for (const [path, states] of seen) assert.deepEqual([...new Set(states)], ['DRAINING'], `${path} answered while the agent drains`);
      assert.ok(
        rig.agent.log.find((entry) => entry.msg === 'epoch exited normally' && entry.epoch === 0),
        'the parent left during the drain',
      );
      assert.ok(lastAnswer > 4500, `epoch 1 still drains after its parent left (last answer ${lastAnswer} ms after SIGTERM)`);
      const result = await rig.agent.exited;
      assert.equal(result.exitCode, 0, rig.agent.stderr());
    } finally {
      await rig.close();
      await assertGone(rig.agent.envoyPids());
    }
  },
);
