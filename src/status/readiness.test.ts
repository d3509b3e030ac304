import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { AdminClient, AdminResult } from '../envoy/admin.ts';
import { judgeReadiness, type NotLive, parseReadinessStats, ReadinessProbe, readinessStatsPath, type ReadinessStats } from './readiness.ts';

const stats = (overrides: Partial<ReadinessStats> = {}): ReadinessStats => ({
  serverState: 0, workersStarted: 1, cdsSuccess: 1, cdsRejected: 0, ldsSuccess: 1, ldsRejected: 0, ...overrides,
});

const statsText = (values: Record<string, number>) => Object.entries(values).map(([name, value]) => `${name}: ${value}`).join('\n');

/** An admin API that answers from a list, one result per call; the last repeats. */
function fakeAdmin(results: AdminResult[]): AdminClient & { paths: string[] } {
  const paths: string[] = [];
  const next = async (path: string) => (paths.push(path), results.length > 1 ? results.shift()! : results[0]!);
  return { paths, get: next, post: next };
}

describe('readiness from Envoy stats', () => {
  it('reads the six stats and ignores the rest', () => {
    const text = statsText({
      'server.state': 3, 'listener_manager.workers_started': 0, 'cluster_manager.cds.update_success': 2,
      'cluster_manager.cds.update_rejected': 1, 'listener_manager.lds.update_success': 0, 'listener_manager.lds.update_rejected': 4, 'other.stat': 9,
    });
    assert.deepEqual(parseReadinessStats(text), { serverState: 3, workersStarted: 0, cdsSuccess: 2, cdsRejected: 1, ldsSuccess: 0, ldsRejected: 4 });
  });

  it('asks admin for exactly those stats, anchored', () => {
    const filter = decodeURIComponent(readinessStatsPath.split('filter=')[1]!);
    assert.ok(filter.startsWith('^(') && filter.endsWith(')$'));
    assert.ok(filter.includes('listener_manager\\.lds\\.update_rejected'));
  });

  const table: [string, Partial<ReadinessStats>, RegExp | undefined][] = [
    ['all good', {}, undefined],
    ['nothing received', { cdsSuccess: 0, ldsSuccess: 0 }, /config not received/],
    ['LDS missing', { ldsSuccess: 0 }, /not fully received.*LDS missing/],
    ['CDS missing', { cdsSuccess: 0 }, /not fully received.*CDS missing/],
    ['LDS rejected', { ldsSuccess: 0, ldsRejected: 1 }, /received .* but rejected.*1 rejected/],
    ['config fine, Envoy initializing', { serverState: 3 }, /not live: server.state is 3 \(INITIALIZING\)/],
    ['config fine, state unknown', { serverState: undefined }, /not live: server.state is unknown/],
    ['workers not started', { workersStarted: 0 }, /workers not started/],
  ];
  for (const [name, overrides, reason] of table) {
    it(name, () => {
      const result = judgeReadiness(stats(overrides));
      if (!reason) return assert.deepEqual(result, { ready: true });
      assert.equal(result.ready, false);
      assert.match(!result.ready ? result.reason : '', reason);
    });
  }
});

describe('ReadinessProbe', () => {
  const ready = statsText({
    'server.state': 0,
    'listener_manager.workers_started': 1,
    'cluster_manager.cds.update_success': 1,
    'listener_manager.lds.update_success': 1,
  });

  it('says why when admin is down, then caches the first ready answer', async () => {
    const admin = fakeAdmin([{ ok: false, error: 'ECONNREFUSED' }, { ok: true, status: 200, body: ready }, { ok: false, error: 'gone' }]);
    const probe = new ReadinessProbe({ admin, stopping: () => false, notLive: () => undefined });
    assert.deepEqual(await probe.check(), { ready: false, reason: 'Envoy admin is not reachable: ECONNREFUSED' });
    assert.deepEqual(await probe.check(), { ready: true });
    assert.deepEqual(await probe.check(), { ready: true });
    assert.equal(admin.paths.length, 2, 'no admin call once ready');
  });

  it('is never ready while the agent drains or stops', async () => {
    let stopping = false;
    const probe = new ReadinessProbe({ admin: fakeAdmin([{ ok: true, status: 200, body: ready }]), stopping: () => stopping, notLive: () => undefined });
    assert.equal((await probe.check()).ready, true);
    stopping = true;
    const result = await probe.check();
    assert.equal(result.ready, false);
    assert.match(!result.ready ? result.reason : '', /draining/);
  });

  it('reports a non-200 admin answer', async () => {
    const probe = new ReadinessProbe({ admin: fakeAdmin([{ ok: true, status: 500, body: '' }]), stopping: () => false, notLive: () => undefined });
    assert.deepEqual(await probe.check(), { ready: false, reason: 'Envoy admin answered HTTP 500 to /stats' });
  });

  it('is not ready with no Envoy running, and judges the next Envoy afresh by its own admin', async () => {
    let notLive: NotLive | undefined;
    const admin = fakeAdmin([{ ok: true, status: 200, body: ready }, { ok: true, status: 200, body: statsText({ 'server.state': 3 }) }]);
    const probe = new ReadinessProbe({ admin, stopping: () => false, notLive: () => notLive });
    assert.deepEqual(await probe.check(), { ready: true });
    notLive = { reason: 'no Envoy epoch is LIVE (no Envoy running; epoch 0 ended failed: killed by SIGKILL)', starting: false };
    assert.deepEqual(await probe.check(), { ready: false, reason: notLive.reason });
    assert.equal(admin.paths.length, 1, 'no admin to ask');
    notLive = { reason: 'no Envoy epoch is LIVE (epoch 1 starting)', starting: true };
    const next = await probe.check();
    assert.equal(next.ready, false, 'a new Envoy is not ready just because the last one was');
    assert.match(!next.ready ? next.reason : '', /config not received/);
  });
});
