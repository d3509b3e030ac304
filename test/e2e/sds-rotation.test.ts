import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { assertGone } from '../support/agent.ts';
import { suiteCleanup } from '../support/cleanup.ts';
import { sidecarFiles, writeSecretVolume } from '../support/certs.ts';
import { keepAliveLoad, newConnectionLoad } from '../support/load.ts';
import { epochLive, servedSerial, waitForSerial } from '../support/tls-rig.ts';
import { startSdsRig } from '../support/sds-rig.ts';

const startedEpochs = (rig: Awaited<ReturnType<typeof startSdsRig>>) =>
  rig.agent.log.entries.filter((entry) => entry.msg === 'envoy started').map((entry) => entry.epoch);

describe('certificates over SDS with the real Envoy', () => {
  it('rotation under load: Envoy serves the new serial with 0 failed requests and no new epoch', { timeout: 120_000 }, async (t) => {
    const rig = await startSdsRig();
    try {
      await epochLive(rig.agent, 0);
      const first = await servedSerial(rig.listenerPort);
      assert.match(first, /^[0-9A-F]+$/, `Envoy presents the SDS certificate: ${first}`);
      const url = `https://127.0.0.1:${rig.listenerPort}/`;
      const loads = Promise.all([keepAliveLoad(url, 4, 12), newConnectionLoad(url, 2, 12)]);
      for (let i = 0; i < 3; i++) {
        await sleep(2500);
        const pair = await rig.rotate();
        await waitForSerial(rig.listenerPort, pair.serial);
      }
      const [keepAlive, fresh] = await loads;
      t.diagnostic(JSON.stringify({ keepAlive: { ok: keepAlive.ok, failed: keepAlive.failed }, newConnections: { ok: fresh.ok, failed: fresh.failed } }));
      assert.ok(keepAlive.ok > 100 && fresh.ok > 50, 'the load really ran');
      assert.equal(keepAlive.failed, 0, keepAlive.samples.join('; '));
      assert.equal(fresh.failed, 0, fresh.samples.join('; '));
      assert.deepEqual(startedEpochs(rig), [0], 'no hot restart: the certificates went over SDS');
      assert.equal(rig.agent.log.entries.filter((entry) => entry.msg === 'certificate change delivered over SDS; no restart').length, 3);
    } finally {
      await rig.close();
      await assertGone(rig.agent.envoyPids());
    }
  });

  describe('a certificate set written half (the new certificate with a key that is not its own)', { timeout: 60_000 }, () => {
    const cleanup = suiteCleanup();
    let rig: Awaited<ReturnType<typeof startSdsRig>>;
    let first: string;
    let next: Awaited<ReturnType<typeof rig.ca.issue>>;

    before(async () => {
      rig = await startSdsRig();
      cleanup.defer(async () => {
        await rig.close();
        await assertGone(rig.agent.envoyPids());
      });
      await epochLive(rig.agent, 0);
      first = await servedSerial(rig.listenerPort);
      next = await rig.ca.issue('localhost');
      const old = await rig.ca.issue('localhost');
      // The new certificate with a key that is not its own: a writer half done.
      await writeSecretVolume(rig.certDir, { ...sidecarFiles(rig.ca, next), 'key.pem': old.key });
      await rig.agent.log.waitFor(
        (entry) => entry.msg === 'certificate files are not a consistent set; keeping the running config until they are' && entry.file !== undefined,
        10_000,
        'the mismatch to be noticed',
      );
    });

    it('the inconsistent set is never served', async () => {
      await sleep(500);
      assert.equal(await servedSerial(rig.listenerPort), first, 'the mismatched certificate is not served');
    });

    it('the completed set is served, with no new epoch', async () => {
      await writeSecretVolume(rig.certDir, sidecarFiles(rig.ca, next));
      await waitForSerial(rig.listenerPort, next.serial);
      assert.deepEqual(startedEpochs(rig), [0]);
    });
  });

  it('--certRotation restart hot-restarts even when SDS delivers the files', { timeout: 60_000 }, async () => {
    const rig = await startSdsRig(['--certRotation', 'restart']);
    try {
      await epochLive(rig.agent, 0);
      const pair = await rig.rotate();
      await epochLive(rig.agent, 1);
      await waitForSerial(rig.listenerPort, pair.serial);
      assert.deepEqual(startedEpochs(rig), [0, 1]);
    } finally {
      await rig.close();
      await assertGone(rig.agent.envoyPids());
    }
  });
});
