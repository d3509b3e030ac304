import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { request as httpRequest } from 'node:http';
import { connect, type TLSSocket } from 'node:tls';
import { setTimeout as sleep } from 'node:timers/promises';
import { execa } from 'execa';
import { assertGone, isAlive, startAgent } from '../support/agent.ts';
import { deferStop, suiteCleanup } from '../support/cleanup.ts';
import { agentBin, nodeBin } from '../support/paths.ts';
import { startPeer } from '../support/peer.ts';
import { freePort } from '../support/ports.ts';
import { edsCluster, endpoints, httpListener, routeConfig } from '../support/resources.ts';
import { startUpstream } from '../support/upstream.ts';
import { waitForStatus } from '../support/status-agent.ts';
import { epochLive, parentPid, startTlsRig, type TlsRig } from '../support/tls-rig.ts';

/** A keep-alive HTTPS connection that made one request and now sits idle. */
function idleConnection(port: number): Promise<TLSSocket> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, servername: 'localhost', rejectUnauthorized: false }, () => {
      socket.write('GET / HTTP/1.1\r\nHost: localhost\r\n\r\n');
    });
    socket.once('data', () => resolve(socket));
    socket.once('error', reject);
  });
}

/** One GET on a new connection (fetch would reuse a pooled one): the status, or the error. */
function freshGet(port: number): Promise<number | string> {
  return new Promise((resolve) => {
    const outgoing = httpRequest({ host: '127.0.0.1', port, path: '/', agent: false, timeout: 5000 }, (response) => {
      response.resume();
      response.once('end', () => resolve(response.statusCode ?? 0));
    });
    outgoing.once('timeout', () => outgoing.destroy(new Error('timeout')));
    outgoing.once('error', (error) => resolve(error.message));
    outgoing.end();
  });
}

/** Envoy's hot-restart sendmsg() budget: 10 retries, 1 s apart. */
const envoyParentRpcRetryMs = 10_000;

/** Starts a rig, runs `body`, and always closes the rig and checks for leftover Envoys, also when `body` failed. */
async function withRig(args: string[], env: Record<string, string> | undefined, body: (rig: TlsRig) => Promise<void>): Promise<void> {
  const rig = await startTlsRig(args, env);
  try {
    await body(rig);
  } finally {
    await rig.close();
    await assertGone(rig.agent.envoyPids(), envoyParentRpcRetryMs + 5000);
  }
}

/** Envoy's own view of a drain (the agent logs "draining listeners" even when Envoy refused the admin calls). */
async function assertEnvoyDraining(rig: TlsRig): Promise<void> {
  const info = (await (await fetch(`http://127.0.0.1:${rig.agent.adminPort}/server_info`)).json()) as { state: string };
  assert.equal(info.state, 'DRAINING', 'Envoy itself reports DRAINING');
}

describe('signals', () => {
  it('SIGTERM drains, stops every epoch (mid hot restart too) and exits 0', () => withRig(['--parentShutdownDuration', '30s'], undefined, async (rig) => {
    await epochLive(rig.agent, 0);
    await rig.rotate();
    await epochLive(rig.agent, 1);
    assert.ok(rig.agent.envoyPids().every(isAlive), 'both epochs run: the parent is still draining');
    const result = await rig.agent.stop('SIGTERM');
    assert.equal(result.exitCode, 0, rig.agent.stderr());
    assert.ok(rig.agent.log.find((entry) => entry.msg === 'draining listeners'));
  }));

  it('SIGKILL of the agent takes every Envoy with it (PR_SET_PDEATHSIG, though spawned detached)', () =>
    withRig(['--parentShutdownDuration', '30s'], undefined, async (rig) => {
      await epochLive(rig.agent, 0);
      await rig.rotate();
      await epochLive(rig.agent, 1);
      const pids = rig.agent.envoyPids();
      assert.equal(pids.length, 2);
      // The leftover check finds Envoys in /proc, not through the agent's log: it must see both here.
      assert.deepEqual([...rig.agent.liveEnvoys()].sort(), [...pids].sort(), 'both Envoys found in /proc');
      // Both epochs get SIGTERM at once. When the child is mid-RPC to its dying
      // parent, Envoy retries the refused sendmsg() 10 times, 1 s apart, before
      // the child exits (4 runs in 10 on a loaded machine, none on an idle one);
      // stop() waits for that before it reports a leftover Envoy.
      const result = await rig.agent.stop('SIGKILL');
      assert.equal(result.signal, 'SIGKILL');
    }));

  describe('an agent draining after SIGTERM, with a 120 s termination drain', () => {
    const cleanup = suiteCleanup();
    let rig: TlsRig;
    let agentPid: number;
    let stopping: Promise<{ exitCode?: number; signal?: string }>;

    before(async () => {
      rig = await startTlsRig(['--terminationDrainDuration', '120']);
      cleanup.defer(async () => {
        await rig.close();
        await assertGone(rig.agent.envoyPids(), envoyParentRpcRetryMs + 5000);
      });
      await epochLive(rig.agent, 0);
      agentPid = await parentPid(rig.agent.envoyPids()[0]!);
      const drained = rig.agent.log.waitFor((entry) => entry.msg === 'draining listeners', 10_000, 'the drain');
      stopping = rig.agent.stop('SIGTERM');
      // Awaited by the test that cuts the drain short; when that test does not run, the rig's close (a second SIGTERM) ends it.
      stopping.catch(() => undefined);
      await drained;
    });

    it('Envoy itself is draining', async () => {
      await assertEnvoyDraining(rig);
    });

    it('a second SIGTERM cuts the long drain short', async () => {
      process.kill(agentPid, 'SIGTERM');
      assert.equal((await stopping).exitCode, 0);
    });
  });

  it('with EXIT_ON_ZERO_ACTIVE_CONNECTIONS the drain ends once the last connection closes', () =>
    withRig(['--terminationDrainDuration', '120', '--minimumDrainDuration', '0s'], { EXIT_ON_ZERO_ACTIVE_CONNECTIONS: 'true' }, async (rig) => {
      await epochLive(rig.agent, 0);
      const socket = await idleConnection(rig.listenerPort);
      const stopping = rig.agent.stop('SIGTERM');
      const waiting = await rig.agent.log.waitFor(
        (entry) => entry.msg === 'waiting for active downstream connections to close',
        10_000,
        'a wait on the open connection',
      );
      assert.equal(waiting.activeConnections, 1);
      await assertEnvoyDraining(rig);
      socket.destroy();
      await rig.agent.log.waitFor((entry) => entry.msg === 'no active downstream connections; stopping', 10_000, 'the drain to end');
      assert.equal((await stopping).exitCode, 0);
    }));

  it("native sidecar: preStop's `request --debug-port=<status> POST drain` drains for good (skip_exit), and the SIGTERM that follows stops at once", async () => {
    await using cleanup = new AsyncDisposableStack();
    const upstream = await startUpstream('hello');
    cleanup.defer(() => upstream.close());
    const listenerPort = await freePort();
    // An inbound listener: a sidecar drains inbound listeners only.
    const inbound = { ...(httpListener('inbound_0', listenerPort, 'local_route') as object), traffic_direction: 'INBOUND' };
    const peer = await startPeer([
      inbound,
      routeConfig('local_route', [{ prefix: '/', cluster: 'upstream' }]),
      edsCluster('upstream'),
      endpoints('upstream', upstream.port),
    ]);
    cleanup.defer(() => peer.stop());
    const statusPort = await freePort();
    // Envoy's own drain time (--drain-time-s) is 1 s; the agent's termination drain 120 s.
    const agent = await startAgent({
      discoveryAddress: peer.address,
      args: ['--statusPort', String(statusPort), '--drainDuration', '1s', '--terminationDrainDuration', '120s'],
    });
    deferStop(cleanup, agent);
    await epochLive(agent, 0);
    await waitForStatus(listenerPort, '/', (answer) => answer.status === 200 && answer.body === 'hello');

    const request = await execa(nodeBin, [agentBin, 'request', `--debug-port=${statusPort}`, 'POST', 'drain'], { reject: false, timeout: 15_000 });
    assert.equal(request.exitCode, 0, request.stderr);
    assert.equal(request.stdout, 'OK');
    const info = (await (await fetch(`http://127.0.0.1:${agent.adminPort}/server_info`)).json()) as { state: string };
    assert.equal(info.state, 'DRAINING', 'Envoy itself reports DRAINING');
    // Past Envoy's drain time the inbound listener still serves: skip_exit keeps it (the app may still be called until it stops).
    await sleep(3000);
    const late = await freshGet(listenerPort);
    assert.equal(late, 200, `a new connection to the inbound listener after Envoy's drain time: ${late}`);

    const signalled = Date.now();
    const result = await agent.stop('SIGTERM');
    const tookMs = Date.now() - signalled;
    assert.equal(result.exitCode, 0, agent.stderr());
    assert.ok(tookMs < 15_000, `SIGTERM after /drain stopped in ${tookMs} ms, not after the 120 s termination drain`);
    assert.ok(agent.log.find((entry) => entry.msg === 'already drained by /drain; stopping without a second drain'));
    assert.equal(
      agent.log.find((entry) => entry.msg === 'draining listeners'),
      undefined,
      'no second drain',
    );
  });
});
