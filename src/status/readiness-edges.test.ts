import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { AdminClient } from '../envoy/admin.ts';
import { judgeReadiness, parseReadinessStats, ReadinessProbe, readinessStatsPath, type ReadinessStats } from './readiness.ts';

/** Edges of readiness.test.ts's cases that mutation testing showed untested. */
const stats = (overrides: Partial<ReadinessStats> = {}): ReadinessStats => ({
  serverState: 0, workersStarted: 1, cdsSuccess: 1, cdsRejected: 0, ldsSuccess: 1, ldsRejected: 0, ...overrides,
});
const reasonOf = (stats: ReadinessStats) => {
  const result = judgeReadiness(stats);
  return result.ready ? 'ready' : result.reason;
};

describe('readiness stats, edges', () => {
  it('the admin filter matches each of the six stats, whole, and nothing else', () => {
    const filter = new RegExp(decodeURIComponent(readinessStatsPath.split('filter=')[1]!));
    const names = [
      'server.state',
      'listener_manager.workers_started',
      'cluster_manager.cds.update_success',
      'cluster_manager.cds.update_rejected',
      'listener_manager.lds.update_success',
      'listener_manager.lds.update_rejected',
    ];
    for (const name of names) assert.ok(filter.test(name), name);
    for (const name of ['server_state', 'server.state.x', 'x.server.state', 'server.statelistener_manager.workers_started', ''])
      assert.equal(filter.test(name), false, name);
  });

  it('counts start at 0 when admin lists none of them', () => {
    assert.deepEqual(parseReadinessStats(''), { cdsSuccess: 0, cdsRejected: 0, ldsSuccess: 0, ldsRejected: 0 });
  });

  it('reads whole lines only: multi-digit values, CRLF and indentation; not a longer name or a trailing word', () => {
    const text = [
      '  cluster_manager.cds.update_success: 12\r',
      'listener_manager.lds.update_success: 345',
      'x-server.state: 3',
      'listener_manager.workers_started: 1 (histogram)',
    ].join('\n');
    assert.deepEqual(parseReadinessStats(text), { cdsSuccess: 12, cdsRejected: 0, ldsSuccess: 345, ldsRejected: 0 });
  });

  it('names each server state, and a rejected CDS as rejected', () => {
    assert.match(reasonOf(stats({ serverState: 1 })), /server\.state is 1 \(DRAINING\)/);
    assert.match(reasonOf(stats({ serverState: 2 })), /server\.state is 2 \(PRE_INITIALIZING\)/);
    assert.match(reasonOf(stats({ serverState: 7 })), /server\.state is 7 \(unknown\)/);
    assert.match(reasonOf(stats({ cdsSuccess: 0, cdsRejected: 1 })), /received .* but rejected \(cds updates: 0 successful, 1 rejected/);
  });
});

describe('ReadinessProbe, blocked', () => {
  it('a reason outside Envoy (no workload certificate) keeps it not ready without asking admin; none lets it ask', async () => {
    const paths: string[] = [];
    const body = 'server.state: 0\nlistener_manager.workers_started: 1\ncluster_manager.cds.update_success: 1\nlistener_manager.lds.update_success: 1';
    const get = async (path: string) => (paths.push(path), { ok: true as const, status: 200, body });
    const admin: AdminClient = { get, post: get };
    let blocked: string | undefined = 'no workload certificate: the CA request failed';
    const probe = new ReadinessProbe({ admin, stopping: () => false, notLive: () => undefined, blocked: () => blocked });
    assert.deepEqual(await probe.check(), { ready: false, reason: 'no workload certificate: the CA request failed' });
    assert.equal(paths.length, 0);
    blocked = undefined;
    assert.deepEqual(await probe.check(), { ready: true });
  });
});
