import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { HealthReport } from '../discovery/consumers.ts';
import { HealthReports } from './reports.ts';

test('every listener hears each report; the last one is kept for a stream that starts later', () => {
  const reports = new HealthReports();
  assert.equal(reports.current(), undefined, 'no report before the first verdict');
  const first: HealthReport[] = [];
  const second: HealthReport[] = [];
  reports.subscribe((report) => void first.push(report));
  reports.subscribe((report) => void second.push(report));
  reports.publish({ healthy: true });
  reports.publish({ healthy: false, message: 'app answered 503' });
  assert.deepEqual(first, [{ healthy: true }, { healthy: false, message: 'app answered 503' }]);
  assert.deepEqual(second, first);
  assert.deepEqual(reports.current(), { healthy: false, message: 'app answered 503' });
});

test('an ended stream unsubscribes: it hears no more, and no listener is left behind', () => {
  const reports = new HealthReports();
  const heard: HealthReport[] = [];
  const kept: HealthReport[] = [];
  const unsubscribe = reports.subscribe((report) => void heard.push(report));
  reports.subscribe((report) => void kept.push(report));
  assert.equal(reports.listeners, 2);
  unsubscribe();
  assert.equal(reports.listeners, 1);
  reports.publish({ healthy: true });
  assert.deepEqual(heard, []);
  assert.deepEqual(kept, [{ healthy: true }]);
});
