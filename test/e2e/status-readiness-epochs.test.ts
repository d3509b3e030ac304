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
import { pollUntil } from '../support/poll.ts';
import { epochLive } from '../support/tls-rig.ts';
import { startUpstream } from '../support/upstream.ts';
import { get, waitForStatus } from '../support/status-agent.ts';

/** Epoch readiness stats as Envoy's admin gives them. */
async function childStats(adminPort: number): Promise<Record<string, number>> {
  const filter = '^(server\\.hot_restart_epoch|cluster_manager\\.cds\\.update_(success|time)|listener_manager\\.lds\\.update_(success|time))$';
  const url = `http://127.0.0.1:${adminPort}/stats?filter=${encodeURIComponent(filter)}`;
  const answer = await fetch(url, { signal: AbortSignal.timeout(3000) }).catch(() => undefined);
  const text = answer?.ok ? await answer.text() : '';
  return Object.fromEntries(text.split('\n').flatMap((line) => (/^([\w.]+): (\d+)$/.exec(line) ? [[line.split(': ')[0]!, Number(line.split(': ')[1])]] : [])));
}

describe('readiness is earned by each epoch (real Envoy, a hot restart)', () => {
  it('an epoch that took over without config of its own is not ready, whatever its parent was, and is once its config arrives', async () => {
    await using cleanup = new AsyncDisposableStack();
    const dir = await tempDir(cleanup, 'readiness-epochs-');
    // The default template with 1 s fetch timeouts instead of none: an epoch that goes LIVE with its static listeners alone.
    const template = (await readFile(join(repoRoot, 'templates', 'envoy_bootstrap.json'), 'utf8'))
      .replaceAll('"initial_fetch_timeout": "0s"', '"initial_fetch_timeout": "1s"');
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
        // The parent lives on long enough for the child to import its counters (stats are merged on the child's 5 s flush),
        // also on a busy machine where the child takes many seconds to go live: the wait below must end while the parent lives.
        '--certRotation', 'restart', '--parentShutdownDuration', '120s'],
    });
    deferStop(cleanup, agent);
    await epochLive(agent, 0);
    await waitForStatus(statusPort, '/healthz/ready', (answer) => answer.status === 200, 30_000);

    await peer.silence();
    await writeSecretVolume(certDir, sidecarFiles(ca, await ca.issue('localhost')));
    await epochLive(agent, 1);
    // Envoy itself: the child counts its parent's CDS and LDS successes as its own; only its update_time gauges say it got none.
    const inherited = await pollUntil(() => childStats(agent.adminPort), {
      what: "epoch 1's admin to show its parent's counters", timeoutMs: 60_000, show: JSON.stringify,
      accept: (stats) =>
        stats['server.hot_restart_epoch'] === 1 && stats['cluster_manager.cds.update_success']! >= 1 && stats['listener_manager.lds.update_success']! >= 1,
    });
    assert.equal(inherited['cluster_manager.cds.update_time'], 0);
    assert.equal(inherited['listener_manager.lds.update_time'], 0);
    const notReady = await waitForStatus(statusPort, '/healthz/ready', (answer) => answer.status !== 200, 15_000);
    assert.equal(notReady.status, 503);
    assert.match(notReady.body, /config not received from the discovery server/);

    await peer.answer();
    await waitForStatus(statusPort, '/healthz/ready', (answer) => answer.status === 200, 30_000);
    assert.equal((await get(statusPort, '/healthz/ready')).status, 200);
  });
});
