import assert from 'node:assert/strict';
import { it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { assertGone } from '../support/agent.ts';
import { keepAliveLoad, newConnectionLoad } from '../support/load.ts';
import { epochLive, startTlsRig, waitForSerial } from './reconcile-support.ts';

const durationS = 24;
const rotations = 5;

it(`zero failed requests across ${rotations} certificate rotations under load (${durationS} s, keep-alive and new connections)`, { timeout: 120_000 }, async (t) => {
  const rig = await startTlsRig();
  try {
    await epochLive(rig.agent, 0);
    const url = `https://127.0.0.1:${rig.listenerPort}/`;
    const loads = Promise.all([keepAliveLoad(url, 4, durationS), newConnectionLoad(url, 2, durationS)]);
    for (let epoch = 1; epoch <= rotations; epoch++) {
      await sleep(3000);
      const pair = await rig.rotate();
      await epochLive(rig.agent, epoch);
      await waitForSerial(rig.listenerPort, pair.serial);
    }
    const [keepAlive, fresh] = await loads;
    t.diagnostic(JSON.stringify({ keepAlive: { ok: keepAlive.ok, failed: keepAlive.failed }, newConnections: { ok: fresh.ok, failed: fresh.failed } }));
    assert.ok(keepAlive.ok > 100 && fresh.ok > 100, 'the load really ran');
    assert.equal(keepAlive.failed, 0, keepAlive.samples.join('; '));
    assert.equal(fresh.failed, 0, fresh.samples.join('; '));
    const started = rig.agent.log.entries.filter((entry) => entry.msg === 'envoy started').map((entry) => entry.epoch);
    assert.deepEqual(started, [0, 1, 2, 3, 4, 5], 'one hot restart per rotation, no retries');
  } finally {
    await rig.close();
    await assertGone(rig.agent.envoyPids());
  }
});
