import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { startAgent } from '../support/agent.ts';
import { makeCa, writeSecretVolume, type KeyPair, type TestCa } from '../support/certs.ts';
import { startPeer } from '../support/peer.ts';
import { freePort } from '../support/ports.ts';
import { startUpstream } from '../support/upstream.ts';
import { epochLive, httpsService, servedSerial, waitForSerial } from '../support/tls-rig.ts';

const writeIngressPair = (dir: string, pair: KeyPair) => writeSecretVolume(dir, { 'tls.crt': pair.cert, 'tls.key': pair.key });

describe('proxy ingress: the --ingressCertDir certificate rotates', () => {
  it('a new tls.crt/tls.key hot-restarts Envoy into the next epoch, which serves it', { timeout: 120_000 }, async () => {
    const cleanup: (() => Promise<unknown>)[] = [];
    try {
      const ca: TestCa = await makeCa();
      cleanup.push(() => ca.close());
      const ingressCertDir = await mkdtemp(join(tmpdir(), 'ingress-certs-'));
      cleanup.push(() => rm(ingressCertDir, { recursive: true, force: true }));
      const first = await ca.issue('localhost');
      await writeIngressPair(ingressCertDir, first);
      const upstream = await startUpstream('through the gateway');
      cleanup.push(() => upstream.close());
      const listenerPort = await freePort();
      const peer = await startPeer(
        httpsService({ listenerPort, upstreamPort: upstream.port, certDir: ingressCertDir, files: { chain: 'tls.crt', key: 'tls.key' } }),
      );
      cleanup.push(() => peer.stop());
      const agent = await startAgent({
        type: 'ingress',
        discoveryAddress: peer.address,
        args: ['--ingressCertDir', ingressCertDir, '--certDebounce', '100ms'],
      });
      cleanup.push(() => agent.stop('SIGTERM'));

      await epochLive(agent, 0);
      await waitForSerial(listenerPort, first.serial);
      const next = await ca.issue('localhost');
      await writeIngressPair(ingressCertDir, next);
      await epochLive(agent, 1);
      await waitForSerial(listenerPort, next.serial);
      assert.equal(await servedSerial(listenerPort), next.serial);
    } finally {
      // Every step runs; the first failure (say, an Envoy the agent left behind) fails the test.
      const failures: unknown[] = [];
      for (const step of cleanup.reverse()) await step().catch((error: unknown) => failures.push(error));
      if (failures.length > 0) throw failures[0];
    }
  });
});
