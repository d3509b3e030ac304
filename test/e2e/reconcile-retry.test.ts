import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { assertGone, startAgent } from '../support/agent.ts';
import { makeCa, sidecarFiles, writeSecretVolume } from '../support/certs.ts';
import { deferStop, tempDir } from '../support/cleanup.ts';
import { startPeer } from '../support/peer.ts';
import { freePort } from '../support/ports.ts';
import { edsCluster, simpleHttpService } from '../support/resources.ts';
import { startUpstream } from '../support/upstream.ts';
import { epochLive, servedSerial, startTlsRig, waitForSerial, writeCrashingEnvoy } from '../support/tls-rig.ts';

describe('retries after Envoy fails', () => {
  it('kill -9 of the serving Envoy: every epoch is aborted and a retry brings a new one up', async () => {
    const rig = await startTlsRig();
    try {
      await epochLive(rig.agent, 0);
      const serial = await servedSerial(rig.listenerPort);
      assert.equal(serial, rig.initial.serial);
      const [first] = rig.agent.envoyPids();
      process.kill(first!, 'SIGKILL');
      const failed = await rig.agent.log.waitFor((entry) => entry.msg === 'epoch terminated with an error; aborting all epochs', 10_000, 'the failure');
      assert.match(String(failed.detail), /SIGKILL/);
      const retry = await rig.agent.log.waitFor((entry) => entry.msg === 'retry scheduled', 10_000, 'a retry');
      assert.equal(retry.delayMs, 200);
      await rig.agent.log.waitFor((entry) => entry.msg === 'envoy started' && entry.envoyPid !== first, 10_000, 'a new Envoy');
      await rig.agent.log.waitFor(
        (entry) => entry.msg === 'epoch live' && rig.agent.log.entries.indexOf(entry) > rig.agent.log.entries.indexOf(retry),
        30_000,
        'the new epoch LIVE',
      );
      await waitForSerial(rig.listenerPort, serial);
      assert.equal(rig.agent.log.entries.filter((entry) => entry.msg === 'envoy started').at(-1)?.epoch, 0, 'the retry starts a fresh chain at epoch 0');
    } finally {
      await rig.close();
      await assertGone(rig.agent.envoyPids());
    }
  });

  it('an Envoy that always crashes: backoff doubles, then the agent exits 1 naming the config', async () => {
    await using cleanup = new AsyncDisposableStack();
    const dir = await tempDir(cleanup, 'crashing-');
    const agent = await startAgent({
      discoveryAddress: '127.0.0.1:9',
      args: ['--binaryPath', await writeCrashingEnvoy(dir), '--retryInitialDelay', '20ms', '--retryBudget', '3'],
    });
    deferStop(cleanup, agent);
    const result = await agent.exited;
    assert.equal(result.exitCode, 1, agent.stderr());
    const delays = agent.log.entries.filter((entry) => entry.msg === 'retry scheduled').map((entry) => entry.delayMs);
    assert.deepEqual(delays, [20, 40, 80]);
    assert.equal(agent.envoyPids().length, 4, 'first start and three retries');
    const spent = agent.log.find((entry) => entry.msg === 'retry budget spent trying to reach the desired config; exiting');
    assert.match(String(spent?.config), /^[0-9a-f]{12}$/);
    assert.match(String(spent?.lastFailure), /exit code 3.*crashing on purpose/);
  });

  it('a rotation while epoch 0 is still initializing waits for it to take over, then hot-restarts once, without spending budget', async () => {
    await using cleanup = new AsyncDisposableStack();
    const root = await tempDir(cleanup, 'initializing-');
    const ca = await makeCa();
    cleanup.defer(() => ca.close());
    const upstream = await startUpstream('warmed');
    cleanup.defer(() => upstream.close());
    const listenerPort = await freePort();
    await writeSecretVolume(join(root, 'certs'), sidecarFiles(ca, await ca.issue('localhost')));
    // A cluster whose endpoints never come keeps epoch 0 INITIALIZING (warming).
    const peer = await startPeer([edsCluster('upstream')]);
    cleanup.defer(() => peer.stop());
    const agent = await startAgent({ discoveryAddress: peer.address, args: ['--certDir', join(root, 'certs'), '--certDebounce', '50ms'] });
    deferStop(cleanup, agent);
    await agent.log.waitFor((entry) => entry.msg === 'envoy started', 10_000, 'epoch 0');
    await writeSecretVolume(join(root, 'certs'), sidecarFiles(ca, await ca.issue('localhost')));
    await agent.log.waitFor(
      (entry) =>
        entry.msg === 'desired config changed' &&
        agent.log.entries.indexOf(entry) > 0 &&
        entry.config !== agent.log.entries.find((first) => first.msg === 'desired config changed')?.config,
      10_000,
      'the rotation',
    );
    // Epoch 1 on top of a parent that is still initializing is refused by Envoy; it is not even tried.
    await sleep(2000);
    assert.equal(agent.log.find((entry) => entry.msg === 'starting epoch' && entry.epoch === 1), undefined, 'epoch 1 waits for epoch 0');
    await peer.setResources(simpleHttpService({ listenerPort, upstreamPort: upstream.port }));
    await epochLive(agent, 1, 30_000);
    assert.equal(agent.log.find((entry) => entry.msg === 'retry scheduled'), undefined, 'no failure retry, no budget spent');
    assert.equal(agent.log.find((entry) => entry.msg === 'previous epoch still initializing; will retry the same epoch'), undefined, 'no futile spawn');
    assert.deepEqual(agent.log.entries.filter((entry) => entry.msg === 'envoy started').map((entry) => entry.epoch), [0, 1]);
    assert.equal(agent.log.find((entry) => entry.msg === 'epoch terminated with an error; aborting all epochs'), undefined);
  });
});
