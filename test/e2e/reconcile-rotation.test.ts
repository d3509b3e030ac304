import assert from 'node:assert/strict';
import { access, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { assertGone } from '../support/agent.ts';
import { pollUntil } from '../support/poll.ts';
import { epochLive, servedSerial, startTlsRig, waitForSerial } from '../support/tls-rig.ts';

const exists = (path: string) => access(path).then(() => true, () => false);

describe('certificate rotation with the real Envoy and the peer', () => {
  it('rotating the files hot-restarts to epoch + 1 and a TLS client sees the new certificate', async () => {
    const rig = await startTlsRig();
    try {
      await epochLive(rig.agent, 0);
      // The certificate written before the start, not whatever is served now (that wait could not fail).
      await waitForSerial(rig.listenerPort, rig.initial.serial);
      const next = await rig.rotate();
      await epochLive(rig.agent, 1);
      await waitForSerial(rig.listenerPort, next.serial);
      const parentExit = await rig.agent.log.waitFor(
        (entry) => entry.msg === 'epoch exited normally' && entry.epoch === 0,
        20_000,
        'epoch 0 to exit after the hot restart',
      );
      assert.ok(parentExit);
      // No upstream stream outlives the Envoy it serves: once epoch 0 is gone, only epoch 1's stream is open at the discovery server.
      const openAtPeer = () => {
        const events = rig.peer.log.entries;
        const closed = new Set(events.filter((entry) => entry.event === 'stream_closed').map((entry) => entry.stream));
        return events.filter((entry) => entry.event === 'stream_open' && !closed.has(entry.stream)).map((entry) => entry.stream);
      };
      await pollUntil(openAtPeer, { what: "epoch 0's stream closed at the discovery server", timeoutMs: 10_000, intervalMs: 100, accept: (open) => open.length === 1,
        show: (open) => `open streams ${open.join(', ')}` });
      const configDir = join(rig.agent.dir, 'config');
      assert.equal(await exists(join(configDir, 'envoy-rev1.json')), true);
      for (let i = 0; i < 50 && (await exists(join(configDir, 'envoy-rev0.json'))); i++) await new Promise((resolve) => setTimeout(resolve, 100));
      assert.equal(await exists(join(configDir, 'envoy-rev0.json')), false, 'the exited epoch\'s bootstrap is removed');
      const started = rig.agent.log.entries.filter((entry) => entry.msg === 'envoy started');
      assert.deepEqual(started.map((entry) => entry.epoch), [0, 1]);
      const args = started.map((entry) => entry.args as string[]);
      assert.ok(args[0]!.includes('--use-dynamic-base-id'));
      const baseId = (await readFile(join(configDir, 'envoy-base-id'), 'utf8')).trim();
      assert.deepEqual(args[1]!.slice(args[1]!.indexOf('--base-id'), args[1]!.indexOf('--base-id') + 2), ['--base-id', baseId]);
    } finally {
      await rig.close();
      await assertGone(rig.agent.envoyPids());
    }
  });

  it('two agents side by side get different base ids and hot-restart independently', async () => {
    const [one, two] = await Promise.all([startTlsRig(), startTlsRig()]);
    try {
      await Promise.all([epochLive(one.agent, 0), epochLive(two.agent, 0)]);
      const ids = await Promise.all([one, two].map((rig) => readFile(join(rig.agent.dir, 'config', 'envoy-base-id'), 'utf8')));
      assert.notEqual(ids[0]!.trim(), ids[1]!.trim());
      const [a, b] = [await one.rotate(), await two.rotate()];
      await Promise.all([epochLive(one.agent, 1), epochLive(two.agent, 1)]);
      await Promise.all([waitForSerial(one.listenerPort, a.serial), waitForSerial(two.listenerPort, b.serial)]);
      const c = await one.rotate();
      await epochLive(one.agent, 2);
      await waitForSerial(one.listenerPort, c.serial);
      assert.equal(await servedSerial(two.listenerPort), b.serial, 'the other agent is untouched');
    } finally {
      await Promise.all([one.close(), two.close()]);
      await assertGone([...one.agent.envoyPids(), ...two.agent.envoyPids()]);
    }
  });
});
