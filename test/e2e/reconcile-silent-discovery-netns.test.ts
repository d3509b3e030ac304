import assert from 'node:assert/strict';
import { createServer, get as httpGet, type Server } from 'node:http';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { execa } from 'execa';
import { startAgent } from '../support/agent.ts';
import { makeCa, sidecarFiles, writeSecretVolume } from '../support/certs.ts';
import { deferStop, tempDir } from '../support/cleanup.ts';
import { makeNetns, netnsSkipReason } from '../support/netns.ts';
import { startPeer } from '../support/peer.ts';
import { freePort } from '../support/ports.ts';
import { edsCluster, endpoints, httpListener, routeConfig } from '../support/resources.ts';
import { epochLive } from '../support/tls-rig.ts';

const skip = await netnsSkipReason();

/**
 * Envoy's default initial fetch timeouts (15 s for CDS, then 15 s for LDS),
 * which a bootstrap without `initial_fetch_timeout: 0s` lets a hot-restart
 * child run out before going LIVE with its static listeners alone; past
 * them by a margin.
 */
const pastFetchTimeoutsMs = 40_000;

/** One request on a new connection (a refused or reset one shows): its status, or the error. */
function ask(url: string): Promise<string> {
  return new Promise((resolve) => {
    const request = httpGet(url, { agent: false, timeout: 5000 }, (response) => {
      response.resume();
      response.on('end', () => resolve(String(response.statusCode)));
      response.on('error', (error) => resolve(error.message));
    });
    request.on('timeout', () => request.destroy(new Error('timed out')));
    request.on('error', (error) => resolve(error.message));
  });
}

/** The app behind the pod's Envoy, on the root namespace's end of the veth. */
async function startApp(host: string): Promise<{ port: number; close(): Promise<void> }> {
  const server: Server = createServer((_request, response) => response.end('hello from the app'));
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return {
    port: (server.address() as { port: number }).port,
    close: () => (server.closeAllConnections(), new Promise((resolve) => server.close(() => resolve()))),
  };
}

/** What the discovery server sends the pod: a listener on every address to the app. */
function podResources(listenerPort: number, appHost: string, appPort: number): unknown[] {
  const listener = httpListener('inbound', listenerPort, 'local_route') as { address: { socket_address: { address: string } } };
  listener.address.socket_address.address = '0.0.0.0';
  const assignment = endpoints('upstream', appPort) as { endpoints: { lb_endpoints: { endpoint: { address: { socket_address: { address: string } } } }[] }[] };
  assignment.endpoints[0]!.lb_endpoints[0]!.endpoint.address.socket_address.address = appHost;
  return [listener, routeConfig('local_route', [{ prefix: '/', cluster: 'upstream' }]), edsCluster('upstream'), assignment];
}

/** Requests and readiness probes, one after the other, until `until` says stop; every answer that was not 200. */
async function watchPod(urls: { app: string; ready: string }, until: () => boolean): Promise<{ requests: number; failed: string[]; notReady: string[] }> {
  const seen = { requests: 0, failed: [] as string[], notReady: [] as string[] };
  while (!until()) {
    const [app, ready] = await Promise.all([ask(urls.app), ask(urls.ready)]);
    seen.requests++;
    if (app !== '200') seen.failed.push(app);
    if (ready !== '200') seen.notReady.push(ready);
    await sleep(100);
  }
  return seen;
}

describe('a hot restart while the discovery server takes calls and answers nothing (a pod)', { skip, timeout: 240_000 }, () => {
  it('the serving epoch keeps the pod served and ready until the new epoch has its config, then the new epoch takes over', async () => {
    await using cleanup = new AsyncDisposableStack();
    const netns = await makeNetns('silent');
    cleanup.defer(() => netns.remove());
    const podIp = /inet ([\d.]+)\//.exec((await execa('ip', ['-n', netns.name, '-4', '-o', 'addr', 'show', 'scope', 'global'])).stdout)![1]!;
    const app = await startApp(netns.hostIp);
    cleanup.defer(() => app.close());
    const [listenerPort, statusPort] = [await freePort(), await freePort()];
    const peer = await startPeer(podResources(listenerPort, netns.hostIp, app.port), { address: `${netns.hostIp}:0` });
    cleanup.defer(() => peer.stop());
    const ca = await makeCa();
    cleanup.defer(() => ca.close());
    const dir = await tempDir(cleanup, 'pilot-agent-silent-');
    const certDir = `${dir}/certs`;
    await writeSecretVolume(certDir, sidecarFiles(ca, await ca.issue('localhost')));
    const agent = await startAgent({
      discoveryAddress: `${netns.hostIp}:${peer.port}`, wrap: ['ip', 'netns', 'exec', netns.name], dir, cwd: dir,
      // Rotation by restart: the new certificate files start epoch 1, as files Envoy reads itself do.
      args: ['--statusPort', String(statusPort), '--certDir', certDir, '--certDebounce', '100ms', '--certRotation', 'restart'],
    });
    deferStop(cleanup, agent);
    const urls = { app: `http://${podIp}:${listenerPort}/`, ready: `http://${podIp}:${statusPort}/healthz/ready` };

    await epochLive(agent, 0);
    for (let tries = 0; tries < 100 && ((await ask(urls.app)) !== '200' || (await ask(urls.ready)) !== '200'); tries++) await sleep(200);
    assert.deepEqual([await ask(urls.app), await ask(urls.ready)], ['200', '200'], 'epoch 0 serves the pod and the pod is ready');

    await peer.silence();
    const from = peer.log.entries.length;
    await writeSecretVolume(certDir, sidecarFiles(ca, await ca.issue('localhost')));
    await agent.log.waitFor((entry) => entry.msg === 'envoy started' && entry.epoch === 1, 30_000, 'epoch 1 to start');
    await peer.log.waitFor((entry) => entry.event === 'call_held', 30_000, "epoch 1's call, taken and not answered", from);

    const deadline = Date.now() + pastFetchTimeoutsMs;
    const silent = await watchPod(urls, () => Date.now() > deadline);
    assert.ok(silent.requests > 20, `requests made: ${silent.requests}`);
    assert.deepEqual(silent.failed, [], 'no request refused or failed while epoch 1 waits for its config');
    assert.deepEqual(silent.notReady, [], 'the pod stays ready: epoch 0 serves it');
    assert.equal(agent.log.find((entry) => entry.msg === 'epoch live' && entry.epoch === 1), undefined, 'epoch 1 did not take over without config');

    await peer.answer();
    const liveAt = Date.now() + 60_000;
    const isLive = () => agent.log.find((entry) => entry.msg === 'epoch live' && entry.epoch === 1) !== undefined;
    const takeover = await watchPod(urls, () => isLive() || Date.now() > liveAt);
    assert.ok(isLive(), 'epoch 1 took over once the discovery server answered');
    assert.deepEqual(takeover.failed, [], 'no request failed while epoch 1 took over');
    await agent.log.waitFor((entry) => entry.msg === 'epoch exited normally' && entry.epoch === 0, 30_000, 'epoch 0 to exit after the takeover');
    assert.deepEqual([await ask(urls.app), await ask(urls.ready)], ['200', '200'], 'epoch 1 serves the pod and earned readiness');
  });
});
