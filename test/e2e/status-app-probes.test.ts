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
import { makeCa } from '../support/certs.ts';
import { makeNetns, netnsSkipReason } from '../support/netns.ts';
import {
  startGrpcApp,
  startHttpApp,
  startRecordingHttpApp,
  startRecordingTcpApp,
  startTcpApp,
  type ProbeApp,
  type RecordingApp,
  type SeenRequest,
} from '../support/probe-apps.ts';
import { simpleHttpService } from '../support/resources.ts';
import { startUpstream, type Upstream } from '../support/upstream.ts';
import { get } from '../support/status-agent.ts';

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
      '/app-health/web/livez': {
        httpGet: { path: '/healthz', port: http.port, scheme: 'HTTP', httpHeaders: [{ name: 'X-Probe', value: 'kubelet' }] },
        timeoutSeconds: 1,
      },
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
    for (const path of [
      '/app-health/nope/livez',
      '/app-health/web/readyz',
      '/app-health/web/livez/x',
      `/app-health/127.0.0.1:${http.port}/livez`,
      '/app-lifecycle/web/livez',
    ]) {
      assert.equal((await get(statusPort, path)).status, 404, path);
    }
    assert.equal((await get(statusPort, '/app-health/web/livez', 'POST')).status, 405);
  });
});

const netnsSkip = await netnsSkipReason();

/** What `app` saw while `probe` ran. */
async function seenDuring(app: RecordingApp, probe: () => Promise<unknown>): Promise<SeenRequest[]> {
  const from = app.seen.length;
  await probe();
  return app.seen.slice(from);
}

describe('app probes go to the pod IP from 127.0.0.6, as Istio\'s (pod IP: our end of a veth to a network namespace)', { skip: netnsSkip }, () => {
  let podIp: string;
  let localOnly: RecordingApp;
  let pod: RecordingApp;
  let podTcp: RecordingApp;
  let localTcp: RecordingApp;
  let secure: RecordingApp;
  let secureHttp1: RecordingApp;
  let podGrpc: Awaited<ReturnType<typeof startGrpcApp>>;
  /** Defaults: pod IP, HTTP/2 probing on, no keep-alive. */
  let statusA: number;
  /** REWRITE_PROBE_LEGACY_LOCALHOST_DESTINATION, ISTIO_ENABLE_HTTP2_PROBING=false, ENABLE_PROBE_KEEPALIVE_CONNECTIONS. */
  let statusB: number;

  const cleanup = suiteCleanup();

  before(async () => {
    const upstream = await startUpstream('hello');
    cleanup.defer(() => upstream.close());
    const peer = await startPeer(simpleHttpService({ listenerPort: await freePort(), upstreamPort: upstream.port }));
    cleanup.defer(() => peer.stop());
    const netns = await makeNetns('probes');
    cleanup.defer(() => netns.remove());
    podIp = netns.hostIp;
    const ca = await makeCa();
    cleanup.defer(() => ca.close());
    const tls = await ca.issue('localhost');
    const apps = await Promise.all([
      startRecordingHttpApp('127.0.0.1'), startRecordingHttpApp(podIp), startRecordingTcpApp(podIp), startRecordingTcpApp('127.0.0.1'),
      startRecordingHttpApp('0.0.0.0', tls), startRecordingHttpApp('0.0.0.0', { ...tls, http1Only: true }),
    ]);
    for (const app of apps) cleanup.defer(() => app.close());
    [localOnly, pod, podTcp, localTcp, secure, secureHttp1] = apps;
    podGrpc = await startGrpcApp(podIp);
    cleanup.defer(() => podGrpc.close());
    const probers = JSON.stringify({
      '/app-health/local/livez': { httpGet: { path: '/local', port: localOnly.port } },
      '/app-health/pod/livez': { httpGet: { path: '/live', port: pod.port } },
      '/app-health/localtcp/readyz': { tcpSocket: { port: localTcp.port } },
      '/app-lifecycle/pod/prestopz': { httpGet: { path: '/prestop', port: pod.port } },
      '/app-lifecycle/pod/poststartz': { tcpSocket: { port: podTcp.port } },
      '/app-health/secure/livez': { httpGet: { path: '/secure', port: secure.port, scheme: 'HTTPS' } },
      '/app-health/secure1/livez': { httpGet: { path: '/secure1', port: secureHttp1.port, scheme: 'HTTPS' } },
      '/app-health/grpc/livez': { grpc: { port: podGrpc.port, service: 'api' } },
    });
    const start = async (env: Record<string, string>) => {
      const statusPort = await freePort();
      const agent = await startAgent({
        discoveryAddress: peer.address,
        args: ['--statusPort', String(statusPort), '--readinessPort', String(await freePort())],
        env: { INSTANCE_IP: podIp, ISTIO_KUBE_APP_PROBERS: probers, ...env },
      });
      deferStop(cleanup, agent);
      await agent.log.waitFor((entry) => entry.msg === 'status server listening', 15_000, 'the status server');
      return statusPort;
    };
    [statusA, statusB] = await Promise.all([
      start({}),
      start({ REWRITE_PROBE_LEGACY_LOCALHOST_DESTINATION: 'true', ISTIO_ENABLE_HTTP2_PROBING: 'false', ENABLE_PROBE_KEEPALIVE_CONNECTIONS: 'true' }),
    ]);
  });

  it('a localhost-only app is not reachable by a probe (as for the kubelet), over HTTP nor TCP', async () => {
    const local = await seenDuring(localOnly, async () => assert.equal((await get(statusA, '/app-health/local/livez')).status, 500));
    assert.deepEqual(local, [], 'the localhost-only app was never reached');
    assert.equal((await get(statusA, '/app-health/localtcp/readyz')).status, 500, 'nor over TCP');
  });

  it('a pod-IP app is reachable by a probe, and sees source 127.0.0.6', async () => {
    const seen = await seenDuring(pod, async () => assert.equal((await get(statusA, '/app-health/pod/livez')).status, 200));
    assert.deepEqual(seen.map(({ address, path }) => [address, path]), [['127.0.0.6', '/live']]);
  });

  it('a gRPC probe (through grpc-js) reaches the pod-IP app from 127.0.0.6', async () => {
    const from = podGrpc.sources.length;
    const answer = await get(statusA, '/app-health/grpc/livez');
    assert.equal(answer.status, 200, answer.body);
    assert.deepEqual(podGrpc.sources.slice(from), ['127.0.0.6']);
    assert.deepEqual(podGrpc.services.slice(from), ['api']);
  });

  it('/app-lifecycle/<container>/{prestopz,poststartz} run the hooks the injector moved (ISTIO_KUBE_APP_PROBERS)', async () => {
    const prestop = await seenDuring(pod, async () => assert.equal((await get(statusA, '/app-lifecycle/pod/prestopz')).status, 200));
    assert.deepEqual(prestop.map(({ address, path }) => [address, path]), [['127.0.0.6', '/prestop']]);
    const poststart = await seenDuring(podTcp, async () => assert.equal((await get(statusA, '/app-lifecycle/pod/poststartz')).status, 200));
    assert.deepEqual(poststart.map(({ address }) => address), ['127.0.0.6']);
    assert.equal((await get(statusA, '/app-lifecycle/other/prestopz')).status, 404);
  });

  it('by default HTTPS probes speak HTTP/2 where the app offers it (ISTIO_ENABLE_HTTP2_PROBING), HTTP/1.1 where not, one connection per probe', async () => {
    const seen = await seenDuring(secure, async () => {
      for (let i = 0; i < 2; i++) {
        const answer = await get(statusA, '/app-health/secure/livez');
        assert.equal(answer.status, 200, answer.body);
      }
    });
    assert.deepEqual(seen.map(({ httpVersion, address }) => [httpVersion, address]), [['2.0', '127.0.0.6'], ['2.0', '127.0.0.6']]);
    assert.notEqual(seen[0]!.port, seen[1]!.port, 'a new connection for each probe');
    const http1 = await seenDuring(secureHttp1, async () => assert.equal((await get(statusA, '/app-health/secure1/livez')).status, 200));
    assert.deepEqual(http1.map(({ httpVersion }) => httpVersion), ['1.1']);
    const plain = await seenDuring(pod, async () => {
      for (let i = 0; i < 2; i++) assert.equal((await get(statusA, '/app-health/pod/livez')).status, 200);
    });
    assert.notEqual(plain[0]!.port, plain[1]!.port, 'plain HTTP too');
  });

  it('REWRITE_PROBE_LEGACY_LOCALHOST_DESTINATION=true probes localhost (still from 127.0.0.6), and the pod-IP app is then out of reach', async () => {
    const seen = await seenDuring(localOnly, async () => assert.equal((await get(statusB, '/app-health/local/livez')).status, 200));
    assert.deepEqual(seen.map(({ address }) => address), ['127.0.0.6']);
    assert.equal((await get(statusB, '/app-health/pod/livez')).status, 500);
  });

  it('ISTIO_ENABLE_HTTP2_PROBING=false keeps HTTPS probes on HTTP/1.1', async () => {
    const seen = await seenDuring(secure, async () => {
      for (let i = 0; i < 2; i++) assert.equal((await get(statusB, '/app-health/secure/livez')).status, 200);
    });
    assert.deepEqual(seen.map(({ httpVersion }) => httpVersion), ['1.1', '1.1']);
  });

  it('ENABLE_PROBE_KEEPALIVE_CONNECTIONS=true reuses a probe\'s connection', async () => {
    const seen = await seenDuring(secure, async () => {
      for (let i = 0; i < 2; i++) assert.equal((await get(statusB, '/app-health/secure/livez')).status, 200);
    });
    assert.equal(seen[0]!.port, seen[1]!.port, 'the second probe came on the first one\'s connection');
    const plain = await seenDuring(localOnly, async () => {
      for (let i = 0; i < 2; i++) assert.equal((await get(statusB, '/app-health/local/livez')).status, 200);
    });
    assert.equal(plain[0]!.port, plain[1]!.port, 'plain HTTP too');
  });
});

describe('malformed app env values exit 2 naming the variable, before --configPath is made', () => {
  /** Runs the agent with `env`; the config dir it is given must not exist afterwards. */
  async function runWithBadEnv(env: Record<string, string>, args: string[] = []) {
    await using cleanup = new AsyncDisposableStack();
    const configPath = join(await tempDir(cleanup, 'bad-app-env-'), 'config');
    const result = await execa(
      nodeBin,
      [agentBin, 'proxy', 'sidecar', '--serviceregistry', 'Other', '--ip', '127.0.0.1', '--configPath', configPath, ...args],
      {
        reject: false,
        timeout: 60_000,
        env,
      },
    );
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

  for (const name of ['REWRITE_PROBE_LEGACY_LOCALHOST_DESTINATION', 'ISTIO_ENABLE_HTTP2_PROBING', 'ENABLE_PROBE_KEEPALIVE_CONNECTIONS']) {
    it(`${name} that is no boolean`, async () => {
      assert.match(await runWithBadEnv({ [name]: 'maybe' }), new RegExp(`env ${name}: "maybe" is not a boolean`));
    });
  }

  it('ISTIO_PROMETHEUS_ANNOTATIONS pointing at the status port (a recursive scrape)', async () => {
    // Refused while parsing: nothing listens on the port.
    const stderr = await runWithBadEnv({ ISTIO_PROMETHEUS_ANNOTATIONS: '{"scrape":"true","port":"15777"}' }, ['--statusPort', '15777']);
    assert.match(stderr, /env ISTIO_PROMETHEUS_ANNOTATIONS: port 15777 is the agent's status port/);
  });
});
