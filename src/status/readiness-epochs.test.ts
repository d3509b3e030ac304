import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { AdminClient } from '../envoy/admin.ts';
import { judgeReadiness, type NotLive, ReadinessProbe, type ReadinessStats, type ServingEpoch } from './readiness.ts';

/** Readiness across a hot restart: each epoch earns its own. */
const statsText = (values: Record<string, number>) => Object.entries(values).map(([name, value]) => `${name}: ${value}`).join('\n');

/** What admin says of one Envoy: its epoch, LIVE or not, and whether it took CDS and LDS itself (counters as a child inherits them). */
const envoy = (epoch: number, options: { live: boolean; ownConfig: boolean }) =>
  statsText({
    'server.state': options.live ? 0 : 3,
    'server.hot_restart_epoch': epoch,
    'listener_manager.workers_started': options.live ? 1 : 0,
    'cluster_manager.cds.update_success': 1,
    'listener_manager.lds.update_success': 1,
    'cluster_manager.cds.update_time': options.ownConfig ? 1_796_000_000_000 : 0,
    'listener_manager.lds.update_time': options.ownConfig ? 1_796_000_000_001 : 0,
  });

/** Admin as the port holder answers: the test sets who holds it. */
function admin(): AdminClient & { body: string; calls: number } {
  const fake = {
    body: '',
    calls: 0,
    get: async () => (fake.calls++, { ok: true as const, status: 200, body: fake.body }),
    post: async () => ({ ok: false as const, error: 'unused' }),
  };
  return fake;
}

const base: ReadinessStats = { serverState: 0, workersStarted: 1, cdsSuccess: 2, cdsRejected: 0, ldsSuccess: 2, ldsRejected: 0 };
const reasonOf = (stats: ReadinessStats, epoch?: number) => {
  const result = judgeReadiness(stats, epoch);
  return result.ready ? 'ready' : result.reason;
};

describe('readiness judged per epoch', () => {
  it("CDS and LDS count by this process's own update times, not by counters a hot restart carried over from the parent", () => {
    assert.match(reasonOf({ ...base, cdsUpdateTime: 0, ldsUpdateTime: 0 }), /config not received .*cds updates: 2 successful/);
    assert.match(reasonOf({ ...base, cdsUpdateTime: 5, ldsUpdateTime: 0 }), /LDS missing/);
    assert.match(reasonOf({ ...base, cdsUpdateTime: 0, ldsUpdateTime: 5 }), /CDS missing/);
    assert.equal(reasonOf({ ...base, cdsUpdateTime: 5, ldsUpdateTime: 5 }), 'ready');
    assert.equal(reasonOf(base), 'ready', 'an Envoy without the gauges is read from its counters');
  });

  it('the answer must come from the serving epoch', () => {
    const stats = { ...base, hotRestartEpoch: 3, cdsUpdateTime: 5, ldsUpdateTime: 5 };
    assert.equal(reasonOf(stats, 2), 'Envoy admin answers for epoch 3, still starting, not for epoch 2 that serves');
    assert.equal(reasonOf(stats, 3), 'ready');
    assert.equal(reasonOf(stats), 'ready', 'no serving epoch to compare with');
  });
});

describe('ReadinessProbe across a hot restart', () => {
  it('the parent stays ready while its child waits for config; the child that takes over is ready only once it has config of its own', async () => {
    const port = admin();
    let serving: ServingEpoch | undefined = { epoch: 0, pid: 100 };
    const probe = new ReadinessProbe({ admin: port, stopping: () => false, notLive: () => undefined, serving: () => serving });
    port.body = envoy(0, { live: true, ownConfig: true });
    assert.deepEqual(await probe.check(), { ready: true });
    // Epoch 1 starts: it holds admin and waits for its config; epoch 0 serves on.
    port.body = envoy(1, { live: false, ownConfig: false });
    assert.deepEqual(await probe.check(), { ready: true });
    assert.equal(port.calls, 1, 'the serving epoch was found ready: no admin call');
    // Epoch 1 took over without config of its own (a custom bootstrap with fetch timeouts, say): not ready.
    serving = { epoch: 1, pid: 101 };
    port.body = envoy(1, { live: true, ownConfig: false });
    const taken = await probe.check();
    assert.equal(taken.ready, false);
    assert.match(!taken.ready ? taken.reason : '', /config not received from the discovery server/);
    // Its config arrives: ready, and cached for epoch 1.
    port.body = envoy(1, { live: true, ownConfig: true });
    assert.deepEqual(await probe.check(), { ready: true });
    port.body = envoy(1, { live: true, ownConfig: false });
    assert.deepEqual(await probe.check(), { ready: true });
    assert.equal(port.calls, 3);
  });

  it('a serving epoch never found ready is not taken for ready from its starting child', async () => {
    const port = admin();
    port.body = envoy(1, { live: true, ownConfig: true });
    const probe = new ReadinessProbe({ admin: port, stopping: () => false, notLive: () => undefined, serving: () => ({ epoch: 0, pid: 100 }) });
    const result = await probe.check();
    assert.equal(result.ready, false);
    assert.match(!result.ready ? result.reason : '', /answers for epoch 1, still starting, not for epoch 0 that serves/);
  });

  it('an epoch found ready while it starts (admin LIVE before the agent heard) stays ready as it takes over, without asking again', async () => {
    const port = admin();
    let notLive: NotLive | undefined = { reason: 'no Envoy epoch is LIVE (epoch 0 starting)', starting: true };
    const probe = new ReadinessProbe({ admin: port, stopping: () => false, notLive: () => notLive, serving: () => ({ epoch: 0, pid: 100 }) });
    port.body = envoy(0, { live: true, ownConfig: true });
    assert.deepEqual(await probe.check(), { ready: true });
    notLive = undefined;
    port.body = '';
    assert.deepEqual(await probe.check(), { ready: true });
    assert.equal(port.calls, 1);
  });

  it('a new process under the same epoch number (a chain started again) earns readiness afresh', async () => {
    const port = admin();
    let serving: ServingEpoch | undefined = { epoch: 0, pid: 100 };
    const probe = new ReadinessProbe({ admin: port, stopping: () => false, notLive: () => undefined, serving: () => serving });
    port.body = envoy(0, { live: true, ownConfig: true });
    assert.deepEqual(await probe.check(), { ready: true });
    serving = { epoch: 0, pid: 200 };
    port.body = envoy(0, { live: true, ownConfig: false });
    assert.equal((await probe.check()).ready, false);
  });
});
