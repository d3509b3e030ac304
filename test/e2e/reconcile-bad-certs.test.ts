import assert from 'node:assert/strict';
import { mkdir, rm, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { assertGone, startAgent, type RunningAgent } from '../support/agent.ts';
import { makeCa, sidecarFiles, writeSecretVolume } from '../support/certs.ts';
import { deferStop, tempDir } from '../support/cleanup.ts';
import { startPeer } from '../support/peer.ts';
import { freePort } from '../support/ports.ts';
import { simpleHttpService } from '../support/resources.ts';
import { startUpstream } from '../support/upstream.ts';
import { epochLive, servedSerial, startTlsRig, waitForSerial } from '../support/tls-rig.ts';

const inconsistent = 'certificate files are not a consistent set; keeping the running config until they are';

/** Makes a change, waits for the agent to reject the files it leaves, naming `file`; then checks nothing restarted. */
async function expectRejected(agent: RunningAgent, change: () => Promise<unknown>, file: string, reason: RegExp): Promise<void> {
  const from = agent.log.entries.length;
  await change();
  const line = await agent.log.waitFor(
    (entry) => entry.msg === inconsistent && entry.file === file && reason.test(String(entry.reason)),
    10_000,
    `a rejection of ${file}`,
    from,
  );
  assert.equal(line.level, 40, 'a warning');
  assert.equal(agent.envoyPids().length, 1, 'no new epoch');
}

describe('bad certificate files never restart Envoy into a broken config', () => {
  it('mismatched key, non-PEM file, half-written set, directory instead of a file: logged, Envoy keeps serving', async () => {
    // Writes through the secret volume's symlinks land in a subdir no watcher
    // sees; the 1 s re-read finds them.
    const rig = await startTlsRig(['--certResync', '1s']);
    try {
      await epochLive(rig.agent, 0);
      const serial = await servedSerial(rig.listenerPort);
      assert.equal(serial, rig.initial.serial);
      const [other, next] = [await rig.ca.issue('other'), await rig.ca.issue('localhost')];
      const key = join(rig.certDir, 'key.pem');
      const chain = join(rig.certDir, 'cert-chain.pem');

      const write = (files: Record<string, string>) => () => writeSecretVolume(rig.certDir, { ...sidecarFiles(rig.ca, next), ...files });
      await expectRejected(rig.agent, write({ 'key.pem': other.key }), key, /does not match/);
      await expectRejected(rig.agent, write({ 'cert-chain.pem': 'this is not PEM' }), chain, /not a PEM certificate/);
      // A writer that is not atomic: half a certificate, then a key, then the whole certificate
      // (which the key does not match): the set is never consistent on the way.
      await expectRejected(rig.agent, write({ 'cert-chain.pem': next.cert.slice(0, 200) }), chain, /no complete CERTIFICATE/);
      await expectRejected(rig.agent, async () => {
        await writeFile(key, other.key);
        await writeFile(chain, next.cert);
      }, key, /does not match/);
      await expectRejected(rig.agent, async () => {
        await unlink(key);
        await mkdir(key);
      }, key, /not a regular file \(a directory\)/);
      assert.equal(await servedSerial(rig.listenerPort), serial, 'the running Envoy still serves the old certificate');

      await rm(key, { recursive: true });
      await writeFile(key, next.key);
      await epochLive(rig.agent, 1);
      await waitForSerial(rig.listenerPort, next.serial);
    } finally {
      await rig.close();
      await assertGone(rig.agent.envoyPids());
    }
  });

  it('a cert dir that does not exist: runs without certificates, then restarts when it appears', async () => {
    await using cleanup = new AsyncDisposableStack();
    const certDir = join(await tempDir(cleanup, 'late-certs-'), 'certs');
    const ca = await makeCa();
    cleanup.defer(() => ca.close());
    const upstream = await startUpstream('plain');
    cleanup.defer(() => upstream.close());
    const listenerPort = await freePort();
    const peer = await startPeer(simpleHttpService({ listenerPort, upstreamPort: upstream.port }));
    cleanup.defer(() => peer.stop());
    const agent = await startAgent({ discoveryAddress: peer.address, args: ['--certDir', certDir, '--certDebounce', '100ms'] });
    deferStop(cleanup, agent);
    const warning = await agent.log.waitFor(
      (entry) => entry.msg === 'certificate dir does not exist; running without its certificates until it appears',
      10_000,
      'the missing dir warning',
    );
    assert.equal(warning.dir, certDir);
    await epochLive(agent, 0);
    await sleep(300);
    await writeSecretVolume(certDir, sidecarFiles(ca, await ca.issue('localhost')));
    await epochLive(agent, 1);
  });
});
