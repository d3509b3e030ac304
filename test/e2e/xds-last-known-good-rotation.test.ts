import assert from 'node:assert/strict';
import { rm } from 'node:fs/promises';
import { describe, it } from 'node:test';
import { assertGone, startAgent } from '../support/agent.ts';
import { makeCa, sidecarFiles, writeSecretVolume } from '../support/certs.ts';
import { deferStop, tempDir } from '../support/cleanup.ts';
import { startPeer, type Peer } from '../support/peer.ts';
import { freePort } from '../support/ports.ts';
import { startUpstream } from '../support/upstream.ts';
import { envoyStarted } from './lkg-support.ts';
import { epochLive, httpsService, readServedSerial, startTlsRig, waitForSerial } from './reconcile-support.ts';
import { get as getStatus } from './status-support.ts';

/** `count` TLS handshakes one after the other; the serials that were not `serial`. */
async function otherSerials(port: number, serial: string, count: number): Promise<string[]> {
  const bad: string[] = [];
  for (let i = 0; i < count; i++) {
    const seen = await readServedSerial(port);
    if (seen.serial !== serial) bad.push(seen.serial ?? `error: ${seen.error}`);
  }
  return bad;
}

for (const mode of ['sotw', 'delta'] as const) {
  const modeArgs = mode === 'delta' ? ['--deltaXds'] : ['--deltaXds=false'];

  describe(`last-known-good xDS: certificate rotation during an outage (${mode})`, () => {
    it('with the peer stopped, the rotated epoch serves the dynamic listener from kept config', async () => {
      const rig = await startTlsRig(modeArgs);
      let peerStopped = false;
      try {
        await epochLive(rig.agent, 0);
        await waitForSerial(rig.listenerPort, rig.initial.serial);
        await rig.peer.stop();
        peerStopped = true;
        const next = await rig.rotate();
        await epochLive(rig.agent, 1);
        await waitForSerial(rig.listenerPort, next.serial);
        assert.deepEqual(await otherSerials(rig.listenerPort, next.serial, 30), []);
        assert.ok(rig.agent.log.find((entry) => entry.msg === 'serving last-known-good config: the discovery server cannot be reached'));
      } finally {
        await rig.agent.stop('SIGTERM');
        await Promise.all([peerStopped ? undefined : rig.peer.stop(), rig.upstream.close(), rig.ca.close(), rm(rig.certDir, { recursive: true, force: true })]);
        await assertGone(rig.agent.envoyPids());
      }
    });

    it('nothing kept and the peer unreachable: the rotation waits, the old epoch keeps serving, and goes ahead once the peer is back', async () => {
      await using cleanup = new AsyncDisposableStack();
      const ca = await makeCa();
      cleanup.defer(() => ca.close());
      const certDir = await tempDir(cleanup, 'gate-certs-');
      const upstream = await startUpstream('hello');
      cleanup.defer(() => upstream.close());
      const [listenerPort, statusPort] = [await freePort(), await freePort()];
      const peerAddress = `127.0.0.1:${await freePort()}`;
      let peer: Peer | undefined;
      cleanup.defer(async () => {
        await peer?.stop();
      });
      await writeSecretVolume(certDir, sidecarFiles(ca, await ca.issue('localhost')));
      const agent = await startAgent({ discoveryAddress: peerAddress, args: ['--certDir', certDir, '--certDebounce', '100ms', '--statusPort', String(statusPort), ...modeArgs] });
      deferStop(cleanup, agent);
      await envoyStarted(agent, 0);
      await agent.log.waitFor((entry) => entry.msg === 'xDS stream ended' && entry.reason === 'dial_failed', 30_000, 'a failed dial');
      const next = await ca.issue('localhost');
      await writeSecretVolume(certDir, sidecarFiles(ca, next));
      const held = await agent.log.waitFor((entry) => entry.msg === 'hot restart held: the running epoch keeps serving until the new one can get its config', 20_000, 'the held restart');
      assert.match(String(held.reason), /cannot be reached/);
      assert.match((await getStatus(statusPort, '/stats/prometheus')).body, /^istio_agent_restart_held 1$/m);
      assert.equal(agent.envoyPids().length, 1, 'no new epoch while held');
      peer = await startPeer(httpsService({ listenerPort, upstreamPort: upstream.port, certDir }), { address: peerAddress });
      await agent.log.waitFor((entry) => entry.msg === 'hot restart released', 60_000, 'the released restart');
      await waitForSerial(listenerPort, next.serial, 30_000);
      assert.match((await getStatus(statusPort, '/stats/prometheus')).body, /^istio_agent_restart_held 0$/m);
    });
  });
}
