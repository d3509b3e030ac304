import assert from 'node:assert/strict';
import { join } from 'node:path';
import { it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { assertGone, isAlive, startAgent, type RunningAgent } from '../support/agent.ts';
import { makeCa, sidecarFiles, writeSecretVolume } from '../support/certs.ts';
import { deferStop, tempDir } from '../support/cleanup.ts';
import { keepAliveLoad, newConnectionLoad } from '../support/load.ts';
import { startPeer } from '../support/peer.ts';
import { freePort } from '../support/ports.ts';
import { p224Pair, writeTemplateWithListener } from '../support/bootstrap-templates.ts';
import { epochLive, servedSerial, startTlsRig, waitForSerial } from '../support/tls-rig.ts';

const keptServing = 'new epoch failed before taking over; the serving epochs keep serving and the new config is retried';

/** Waits for the "kept serving" line about epoch 1 logged after index `from` (for another set than `not`: a retry of the last one may land first). */
function failureAfter(agent: RunningAgent, from: number, not?: unknown) {
  return agent.log.waitFor((entry) => entry.msg === keptServing && entry.epoch === 1 && entry.config !== not, 15_000, 'the new epoch to fail', from);
}

it(
  'an unloadable certificate set: the serving epoch keeps serving under load (0 failed requests), then the good set is picked up',
  { timeout: 120_000 },
  async (t) => {
    await using cleanup = new AsyncDisposableStack();
    const root = await tempDir(cleanup, 'failing-epoch-');
    const certDir = join(root, 'certs');
    const ca = await makeCa();
    cleanup.defer(() => ca.close());
    const first = await ca.issue('localhost');
    await writeSecretVolume(certDir, sidecarFiles(ca, first));
    const listenerPort = await freePort();
    const template = await writeTemplateWithListener(root, listenerPort);
    const peer = await startPeer([]);
    cleanup.defer(() => peer.stop());
    const agent = await startAgent({ discoveryAddress: peer.address, args: ['--templateFile', template, '--certDir', certDir, '--certDebounce', '100ms'] });
    deferStop(cleanup, agent);
    cleanup.defer(() => {
      const story = agent.log.entries.filter((entry) => entry.component === 'agent' || entry.msg === 'envoy started');
      t.diagnostic(story.map((entry) => `${entry.msg} epoch=${entry.epoch} ${String(entry.detail ?? entry.config ?? '').slice(0, 120)}`).join('\n'));
    });
    await epochLive(agent, 0);
    assert.equal(await servedSerial(listenerPort), first.serial);
    const url = `https://127.0.0.1:${listenerPort}/`;
    const loads = Promise.all([keepAliveLoad(url, 4, 14), newConnectionLoad(url, 2, 14)]);
    await sleep(2000);

    const p224 = await p224Pair(root);
    let from = agent.log.entries.length;
    await writeSecretVolume(certDir, { 'cert-chain.pem': p224.cert, 'key.pem': p224.key, 'root-cert.pem': ca.cert });
    const refused = await failureAfter(agent, from);
    assert.equal(refused.level, 40, 'one warning');
    assert.match(String(refused.config), /^[0-9a-f]{12}$/, 'names the set by its hash');
    assert.match(String(refused.detail), /cert-chain\.pem|key\.pem/, 'and the file Envoy could not load');
    assert.deepEqual(refused.serving, [0]);
    assert.ok(isAlive(agent.envoyPids()[0]!), 'epoch 0 still runs');
    assert.equal(await servedSerial(listenerPort), first.serial, 'the old certificate is still served');

    from = agent.log.entries.length;
    const next = await ca.issue('localhost');
    await writeSecretVolume(certDir, { 'cert-chain.pem': next.cert, 'key.pem': next.key });
    const noRoot = await failureAfter(agent, from, refused.config);
    assert.match(String(noRoot.detail), /root-cert\.pem/, 'a deleted root-cert.pem is named');
    assert.equal(await servedSerial(listenerPort), first.serial);

    await writeSecretVolume(certDir, sidecarFiles(ca, next));
    await epochLive(agent, 1);
    await waitForSerial(listenerPort, next.serial);
    const [keepAlive, fresh] = await loads;
    t.diagnostic(JSON.stringify({ keepAlive: { ok: keepAlive.ok, failed: keepAlive.failed }, newConnections: { ok: fresh.ok, failed: fresh.failed } }));
    assert.ok(keepAlive.ok > 100 && fresh.ok > 20, 'the load really ran');
    assert.equal(keepAlive.failed, 0, keepAlive.samples.join('; '));
    assert.equal(fresh.failed, 0, fresh.samples.join('; '));
    assert.equal(
      agent.log.find((entry) => entry.msg === 'epoch terminated with an error; aborting all epochs'),
      undefined,
      'nothing was aborted',
    );
    const refusedUntil = agent.log.entries.indexOf(noRoot);
    const spawnedEarly = agent.log.entries.slice(0, refusedUntil).filter((entry) => entry.msg === 'envoy started' && entry.epoch !== 0);
    assert.deepEqual(spawnedEarly, [], 'no Envoy process was started for the refused sets');
  },
);

it(
  'the same with the TLS listener sent by the discovery server (files named in LDS): an unloadable set never reaches Envoy',
  { timeout: 120_000 },
  async (t) => {
    await using cleanup = new AsyncDisposableStack();
    const rig = await startTlsRig();
    cleanup.defer(async () => {
      await rig.close();
      await assertGone(rig.agent.envoyPids());
    });
    const dir = await tempDir(cleanup, 'p224-');
    await epochLive(rig.agent, 0);
    const served = await servedSerial(rig.listenerPort);
    const url = `https://127.0.0.1:${rig.listenerPort}/`;
    const loads = Promise.all([keepAliveLoad(url, 4, 8), newConnectionLoad(url, 2, 8)]);
    await sleep(1500);
    const p224 = await p224Pair(dir);
    const from = rig.agent.log.entries.length;
    await writeSecretVolume(rig.certDir, { 'cert-chain.pem': p224.cert, 'key.pem': p224.key, 'root-cert.pem': rig.ca.cert });
    const refused = await failureAfter(rig.agent, from);
    assert.match(String(refused.detail), /cannot load the certificate files.*cert-chain\.pem/);
    await sleep(1500);
    assert.equal(await servedSerial(rig.listenerPort), served, 'the listener and its old certificate are still there');
    const pair = await rig.rotate();
    await epochLive(rig.agent, 1);
    await waitForSerial(rig.listenerPort, pair.serial);
    const [keepAlive, fresh] = await loads;
    t.diagnostic(JSON.stringify({ keepAlive: { ok: keepAlive.ok, failed: keepAlive.failed }, newConnections: { ok: fresh.ok, failed: fresh.failed } }));
    assert.equal(keepAlive.failed, 0, keepAlive.samples.join('; '));
    assert.equal(fresh.failed, 0, fresh.samples.join('; '));
  },
);
