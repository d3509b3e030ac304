import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { execa } from 'execa';
import { startAgent, type RunningAgent } from '../support/agent.ts';
import { deferStop, suiteCleanup, tempDir } from '../support/cleanup.ts';
import { agentBin, nodeBin } from '../support/paths.ts';
import { startPeer, type Peer } from '../support/peer.ts';
import { freePort } from '../support/ports.ts';
import { startGrpcApp, startHttpApp, startTcpApp, type ProbeApp } from '../support/probe-apps.ts';
import { simpleHttpService } from '../support/resources.ts';
import { startUpstream, type Upstream } from '../support/upstream.ts';
import { get } from './status-support.ts';

describe('/app-health probes the app as the injector configured, with the real Envoy', () => {
  let upstream: Upstream;
  let peer: Peer;
  let http: Awaited<ReturnType<typeof startHttpApp>>;
  let tcp: ProbeApp;
  let grpc: Awaited<ReturnType<typeof startGrpcApp>>;
  let agent: RunningAgent;
  let statusPort: number;

  const cleanup = suiteCleanup();

  before(async () => {
    upstream = await startUpstream('hello');
    cleanup.defer(() => upstream.close());
    peer = await startPeer(simpleHttpService({ listenerPort: await freePort(), upstreamPort: upstream.port }));
    cleanup.defer(() => peer.stop());
    http = await startHttpApp();
    cleanup.defer(() => http.close());
    tcp = await startTcpApp();
    cleanup.defer(() => tcp.close());
    grpc = await startGrpcApp();
    cleanup.defer(() => grpc.close());
    statusPort = await freePort();
    const probers = {
      '/app-health/web/livez': { httpGet: { path: '/healthz', port: http.port, scheme: 'HTTP', httpHeaders: [{ name: 'X-Probe', value: 'kubelet' }] }, timeoutSeconds: 1 },
      '/app-health/web/startupz': { httpGet: { path: '/slow', port: http.port }, timeoutSeconds: 1 },
      '/app-health/moved/livez': { httpGet: { path: '/moved', port: http.port }, timeoutSeconds: 1 },
      '/app-health/db/readyz': { tcpSocket: { port: tcp.port }, timeoutSeconds: 1 },
      '/app-health/api/livez': { grpc: { port: grpc.port, service: 'api' }, timeoutSeconds: 1 },
    };
    agent = await startAgent({
      discoveryAddress: peer.address,
      args: ['--statusPort', String(statusPort), '--readinessPort', String(await freePort()), '--log_output_level', 'default:info'],
      env: { ISTIO_KUBE_APP_PROBERS: JSON.stringify(probers) },
    });
    deferStop(cleanup, agent);
    await agent.log.waitFor((entry) => entry.msg === 'status server listening', 15_000, 'the status server');
  });

  const apps: [string, string, () => ProbeApp, number][] = [
    ['HTTP', '/app-health/web/livez', () => http, 503],
    ['TCP', '/app-health/db/readyz', () => tcp, 500],
    ['gRPC', '/app-health/api/livez', () => grpc, 500],
  ];
  for (const [kind, path, app, sick] of apps) {
    it(`${kind}: healthy, unhealthy, healthy again`, async () => {
      assert.equal((await get(statusPort, path)).status, 200);
      await app().setHealthy(false);
      const down = await get(statusPort, path);
      assert.equal(down.status, sick, down.body);
      await app().setHealthy(true);
      assert.equal((await get(statusPort, path)).status, 200);
    });
  }

  it('follows the app\'s same-host redirect to its verdict, as the kubelet', async () => {
    assert.equal((await get(statusPort, '/app-health/moved/livez')).status, 200);
    await http.setHealthy(false);
    try {
      const down = await get(statusPort, '/app-health/moved/livez');
      assert.equal(down.status, 503, down.body);
    } finally {
      await http.setHealthy(true);
    }
  });

  it('sends the configured headers and the gRPC service name', async () => {
    await get(statusPort, '/app-health/web/livez');
    assert.equal(http.lastHeaders?.['x-probe'], 'kubelet');
    assert.ok(grpc.services.includes('api'), `services asked: ${grpc.services.join(',')}`);
  });

  it('fails a probe that outlives its timeout, and answers in about that time', async () => {
    const started = Date.now();
    const slow = await get(statusPort, '/app-health/web/startupz');
    assert.equal(slow.status, 500);
    assert.match(slow.body, /timed out after 1000 ms/);
    assert.ok(Date.now() - started < 4500, 'bounded by the probe timeout, not the kubelet\'s');
  });

  it('answers 404 for an unknown container or probe and takes no target from the request', async () => {
    for (const path of ['/app-health/nope/livez', '/app-health/web/readyz', '/app-health/web/livez/x', `/app-health/127.0.0.1:${http.port}/livez`]) {
      assert.equal((await get(statusPort, path)).status, 404, path);
    }
    assert.equal((await get(statusPort, '/app-health/web/livez', 'POST')).status, 405);
  });
});

describe('malformed app env values exit 2 naming the variable, before --configPath is made', () => {
  /** Runs the agent with `env`; the config dir it is given must not exist afterwards. */
  async function runWithBadEnv(env: Record<string, string>, args: string[] = []) {
    await using cleanup = new AsyncDisposableStack();
    const configPath = join(await tempDir(cleanup, 'bad-app-env-'), 'config');
    const result = await execa(nodeBin, [agentBin, 'proxy', 'sidecar', '--serviceregistry', 'Other', '--ip', '127.0.0.1', '--configPath', configPath, ...args], {
      reject: false, timeout: 60_000, env,
    });
    assert.equal(result.exitCode, 2, result.stderr);
    assert.equal(result.stderr.trim().split('\n').length, 1, result.stderr);
    assert.equal(existsSync(configPath), false, 'bad input leaves no --configPath behind');
    return result.stderr;
  }

  for (const name of ['ISTIO_KUBE_APP_PROBERS', 'ISTIO_PROMETHEUS_ANNOTATIONS']) {
    it(name, async () => {
      assert.match(await runWithBadEnv({ [name]: '{not json' }), new RegExp(`env ${name}: not JSON`));
    });
  }

  it('ISTIO_PROMETHEUS_ANNOTATIONS pointing at the status port (a recursive scrape)', async () => {
    // Refused while parsing: nothing listens on the port.
    const stderr = await runWithBadEnv({ ISTIO_PROMETHEUS_ANNOTATIONS: '{"scrape":"true","port":"15777"}' }, ['--statusPort', '15777']);
    assert.match(stderr, /env ISTIO_PROMETHEUS_ANNOTATIONS: port 15777 is the agent's status port/);
  });
});
