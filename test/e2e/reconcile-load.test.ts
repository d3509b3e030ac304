import assert from 'node:assert/strict';
import { it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { assertGone } from '../support/agent.ts';
import { keepAliveLoad, newConnectionLoad } from '../support/load.ts';
import { epochLive, startTlsRig, waitForSerial } from '../support/tls-rig.ts';

const durationS = 24;
const rotations = 5;
/** The loads' cap: on a busy machine the rotations take longer, and the loads last until the last drain is over. */
const capS = 100;
/** The old epoch drains for --drainDuration (1 s, test/support/agent.ts) after the switch: that too under load. */
const drainMs = 1000;

/** Both loads until `until` aborts, and when they ran: from the start of either to the end of the first to finish. */
async function runLoads(url: string, until: AbortSignal) {
  const startedAt = Date.now();
  const timed = <T>(load: Promise<T>) => load.then((result) => ({ result, endedAt: Date.now() }));
  const [keepAlive, fresh] = await Promise.all([timed(keepAliveLoad(url, 4, capS, until)), timed(newConnectionLoad(url, 2, capS, until))]);
  return { keepAlive: keepAlive.result, fresh: fresh.result, startedAt, endedAt: Math.min(keepAlive.endedAt, fresh.endedAt) };
}

it(
  `zero failed requests across ${rotations} certificate rotations under load (${durationS} s, keep-alive and new connections)`,
  { timeout: 120_000 },
  async (t) => {
    const rig = await startTlsRig();
    try {
      await epochLive(rig.agent, 0);
      const stop = new AbortController();
      const loads = runLoads(`https://127.0.0.1:${rig.listenerPort}/`, stop.signal);
      // Rotations spread over the load, so each hot restart and the old Envoy's drain fall inside it.
      const loadStart = Date.now();
      const spacingMs = (durationS * 1000) / (rotations + 1);
      const switches: { writtenAt: number; servedAt: number }[] = [];
      for (let epoch = 1; epoch <= rotations; epoch++) {
        await sleep(Math.max(0, loadStart + epoch * spacingMs - Date.now()));
        const writtenAt = Date.now();
        const pair = await rig.rotate();
        await epochLive(rig.agent, epoch);
        await waitForSerial(rig.listenerPort, pair.serial);
        switches.push({ writtenAt, servedAt: Date.now() });
      }
      // The loads cover the last switch's drain too, however long the rotations took, and last at least durationS.
      await sleep(Math.max(drainMs + 500, loadStart + durationS * 1000 - Date.now()));
      stop.abort();
      const { keepAlive, fresh, startedAt, endedAt } = await loads;
      const relative = switches.map(({ writtenAt, servedAt }) => `${writtenAt - startedAt}..${servedAt - startedAt} ms`);
      t.diagnostic(
        JSON.stringify({
          keepAlive: { ok: keepAlive.ok, failed: keepAlive.failed },
          newConnections: { ok: fresh.ok, failed: fresh.failed },
          loadMs: endedAt - startedAt,
          rotations: relative,
        }),
      );
      for (const [index, { writtenAt, servedAt }] of switches.entries()) {
        assert.ok(
          writtenAt >= startedAt && servedAt + drainMs <= endedAt,
          `rotation ${index + 1} (${relative[index]}) and its drain inside the load (0..${endedAt - startedAt} ms)`,
        );
      }
      assert.ok(keepAlive.ok > 100 && fresh.ok > 100, 'the load really ran');
      assert.equal(keepAlive.failed, 0, keepAlive.samples.join('; '));
      assert.equal(fresh.failed, 0, fresh.samples.join('; '));
      const started = rig.agent.log.entries.filter((entry) => entry.msg === 'envoy started').map((entry) => entry.epoch);
      assert.deepEqual(started, [0, 1, 2, 3, 4, 5], 'one hot restart per rotation, no retries');
    } finally {
      await rig.close();
      await assertGone(rig.agent.envoyPids());
    }
  },
);
