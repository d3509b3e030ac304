import assert from 'node:assert/strict';
import { rm } from 'node:fs/promises';
import { describe, it } from 'node:test';
import { assertGone, startAgent } from '../support/agent.ts';
import { makeCa, sidecarFiles, writeSecretVolume } from '../support/certs.ts';
import { deferStop, tempDir } from '../support/cleanup.ts';
import { startPeer, type Peer } from '../support/peer.ts';
import { freePort } from '../support/ports.ts';
import { startScriptedUpstream } from '../support/scripted-upstream.ts';
import { startUpstream } from '../support/upstream.ts';
import { envoyStarted } from '../support/routed-service.ts';
import { epochLive, httpsService, readServedSerial, startTlsRig, waitForSerial } from '../support/tls-rig.ts';
import { get as getStatus } from '../support/status-agent.ts';

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

    it('reached once, nothing kept, the peer gone: the rotation waits, the old epoch keeps serving, and goes ahead once the peer is back', async () => {
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
      // A server that takes the call and sends nothing: reached, so Envoy could have had config, and nothing is kept.
      const silent = await startScriptedUpstream(
        (stream) => stream.respond({ ':status': 200, 'content-type': 'application/grpc' }),
        Number(peerAddress.split(':')[1]),
      );
      cleanup.defer(() => silent.close());
      await writeSecretVolume(certDir, sidecarFiles(ca, await ca.issue('localhost')));
      const agent = await startAgent({
        discoveryAddress: peerAddress,
        args: ['--certDir', certDir, '--certDebounce', '100ms', '--statusPort', String(statusPort), ...modeArgs],
      });
      deferStop(cleanup, agent);
      await envoyStarted(agent, 0);
      // Envoy's stream takes the predial's call as it opens (a stream that opened after the call closed would not have reached the server).
      await agent.log.waitFor((entry) => entry.msg === 'Envoy opened an xDS stream', 30_000, "Envoy's stream");
      await agent.log.waitFor((entry) => entry.msg === 'connected to the discovery server', 30_000, 'the call reaching the server');
      await silent.close();
      await agent.log.waitFor((entry) => entry.msg === 'xDS stream ended' && entry.reason === 'dial_failed', 30_000, 'a failed dial');
      // Epoch 0 waits for its config (no initial fetch timeout): it serves nothing, yet a restart is held behind the gate all the same.
      const next = await ca.issue('localhost');
      await writeSecretVolume(certDir, sidecarFiles(ca, next));
      const held = await agent.log.waitFor(
        (entry) => entry.msg === 'hot restart held: the running epoch keeps serving until the new one can get its config',
        20_000,
        'the held restart',
      );
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
