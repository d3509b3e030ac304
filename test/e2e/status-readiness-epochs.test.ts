import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { startAgent } from '../support/agent.ts';
import { makeCa, sidecarFiles, writeSecretVolume } from '../support/certs.ts';
import { deferStop, tempDir } from '../support/cleanup.ts';
import { repoRoot } from '../support/paths.ts';
import { startPeer } from '../support/peer.ts';
import { freePort } from '../support/ports.ts';
import { simpleHttpService } from '../support/resources.ts';
import { epochLive } from '../support/tls-rig.ts';
import { startUpstream } from '../support/upstream.ts';
import { get, waitForStatus } from '../support/status-agent.ts';

describe('readiness is earned by each epoch (real Envoy, a hot restart)', () => {
  it('an epoch that took over without config of its own is not ready, whatever its parent was, and is once its config arrives', async () => {
    await using cleanup = new AsyncDisposableStack();
    const dir = await tempDir(cleanup, 'readiness-epochs-');
    // The default template with 1 s fetch timeouts instead of none: an epoch that goes LIVE with its static listeners alone.
    const template = (await readFile(join(repoRoot, 'templates', 'envoy_bootstrap.json'), 'utf8')).replaceAll('"initial_fetch_timeout": "0s"', '"initial_fetch_timeout": "1s"');
    assert.match(template, /"initial_fetch_timeout": "1s"/);
    await writeFile(join(dir, 'template.json'), template);
    const upstream = await startUpstream('hello');
    cleanup.defer(() => upstream.close());
    const peer = await startPeer(simpleHttpService({ listenerPort: await freePort(), upstreamPort: upstream.port }));
    cleanup.defer(() => peer.stop());
    const ca = await makeCa();
    cleanup.defer(() => ca.close());
    const certDir = join(dir, 'certs');
    await writeSecretVolume(certDir, sidecarFiles(ca, await ca.issue('localhost')));
    const statusPort = await freePort();
    const agent = await startAgent({
      discoveryAddress: peer.address,
      args: ['--templateFile', join(dir, 'template.json'), '--statusPort', String(statusPort), '--certDir', certDir, '--certDebounce', '100ms',
        '--certRotation', 'restart'],
    });
    deferStop(cleanup, agent);
    await epochLive(agent, 0);
    await waitForStatus(statusPort, '/healthz/ready', (answer) => answer.status === 200, 30_000);

    await peer.silence();
    await writeSecretVolume(certDir, sidecarFiles(ca, await ca.issue('localhost')));
    await epochLive(agent, 1);
    const notReady = await waitForStatus(statusPort, '/healthz/ready', (answer) => answer.status !== 200, 15_000);
    assert.equal(notReady.status, 503);
    assert.match(notReady.body, /config not received from the discovery server/);

    await peer.answer();
    await waitForStatus(statusPort, '/healthz/ready', (answer) => answer.status === 200, 30_000);
    assert.equal((await get(statusPort, '/healthz/ready')).status, 200);
  });
});
