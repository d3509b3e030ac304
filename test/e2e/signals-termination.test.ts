import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { connect, type TLSSocket } from 'node:tls';
import { assertGone, isAlive } from '../support/agent.ts';
import { epochLive, parentPid, startTlsRig } from './reconcile-support.ts';

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

/** Envoy's hot-restart sendmsg() budget: 10 retries, 1 s apart. */
const envoyParentRpcRetryMs = 10_000;

describe('signals', () => {
  it('SIGTERM drains, stops every epoch (mid hot restart too) and exits 0', async () => {
    const rig = await startTlsRig(['--parentShutdownDuration', '30s']);
    await epochLive(rig.agent, 0);
    await rig.rotate();
    await epochLive(rig.agent, 1);
    assert.ok(rig.agent.envoyPids().every(isAlive), 'both epochs run: the parent is still draining');
    const result = await rig.agent.stop('SIGTERM');
    await rig.close();
    assert.equal(result.exitCode, 0, rig.agent.stderr());
    assert.ok(rig.agent.log.find((entry) => entry.msg === 'draining listeners'));
    await assertGone(rig.agent.envoyPids());
  });

  it('SIGKILL of the agent takes every Envoy with it (PR_SET_PDEATHSIG, though spawned detached)', async () => {
    const rig = await startTlsRig(['--parentShutdownDuration', '30s']);
    await epochLive(rig.agent, 0);
    await rig.rotate();
    await epochLive(rig.agent, 1);
    const pids = rig.agent.envoyPids();
    assert.equal(pids.length, 2);
    const result = await rig.agent.stop('SIGKILL');
    await rig.close();
    assert.equal(result.signal, 'SIGKILL');
    // Both epochs get SIGTERM at once. When the child is mid-RPC to its dying
    // parent, Envoy retries the refused sendmsg() 10 times, 1 s apart, before
    // the child exits (4 runs in 10 on a loaded machine, none on an idle one).
    await assertGone(pids, envoyParentRpcRetryMs + 5000);
  });

  it('a second SIGTERM cuts a long drain short', async () => {
    const rig = await startTlsRig(['--terminationDrainDuration', '120']);
    await epochLive(rig.agent, 0);
    const agentPid = await parentPid(rig.agent.envoyPids()[0]!);
    const drained = rig.agent.log.waitFor((entry) => entry.msg === 'draining listeners', 10_000, 'the drain');
    const stopping = rig.agent.stop('SIGTERM');
    await drained;
    process.kill(agentPid, 'SIGTERM');
    assert.equal((await stopping).exitCode, 0);
    await rig.close();
    await assertGone(rig.agent.envoyPids());
  });

  it('with EXIT_ON_ZERO_ACTIVE_CONNECTIONS the drain ends once the last connection closes', async () => {
    const rig = await startTlsRig(['--terminationDrainDuration', '120', '--minimumDrainDuration', '0s'], { EXIT_ON_ZERO_ACTIVE_CONNECTIONS: 'true' });
    try {
      await epochLive(rig.agent, 0);
      const socket = await idleConnection(rig.listenerPort);
      const stopping = rig.agent.stop('SIGTERM');
      const waiting = await rig.agent.log.waitFor((entry) => entry.msg === 'waiting for active downstream connections to close', 10_000, 'a wait on the open connection');
      assert.equal(waiting.activeConnections, 1);
      socket.destroy();
      await rig.agent.log.waitFor((entry) => entry.msg === 'no active downstream connections; stopping', 10_000, 'the drain to end');
      assert.equal((await stopping).exitCode, 0);
    } finally {
      await rig.close();
      await assertGone(rig.agent.envoyPids());
    }
  });
});
