import assert from 'node:assert/strict';
import { test } from 'node:test';
import pino from 'pino';
import type { HealthReport } from '../discovery/consumers.ts';
import { FakeClock } from '../shared/clock.ts';
import { HealthChecker } from './checker.ts';
import type { HealthProbeConfig } from './probe-config.ts';

const settle = () => new Promise((resolve) => setImmediate(resolve));

/** A checker over scripted verdicts (undefined passes, a string fails), one per check, Envoy ready unless told. */
function checker(config: Partial<HealthProbeConfig>, verdicts: (string | undefined)[], envoy: (string | undefined)[] = []) {
  const clock = new FakeClock();
  const reports: HealthReport[] = [];
  let checks = 0;
  const subject = new HealthChecker({
    config: { action: { kind: 'exec', command: ['true'], timeoutMs: 1000 }, initialDelayMs: 0, periodMs: 10_000, successThreshold: 1, failureThreshold: 1, ...config },
    probe: async () => verdicts[checks++],
    envoyReady: async () => envoy.shift(),
    report: (report) => void reports.push(report),
    clock,
    logger: pino({ level: 'silent' }),
  });
  const tick = async (ms: number) => {
    clock.advance(ms);
    await settle();
  };
  return { subject, clock, reports, tick, checks: () => checks };
}

test('after the initial delay, one check at once, then one per period; only a change of verdict is reported', async () => {
  const run = checker({ initialDelayMs: 5_000 }, [undefined, undefined, 'app answered 503', 'app answered 503', undefined]);
  run.subject.start();
  await run.tick(4_999);
  assert.equal(run.checks(), 0);
  await run.tick(1);
  assert.deepEqual(run.reports, [{ healthy: true }]);
  for (let period = 0; period < 4; period++) await run.tick(10_000);
  assert.equal(run.checks(), 5);
  assert.deepEqual(run.reports, [{ healthy: true }, { healthy: false, message: 'app answered 503' }, { healthy: true }]);
  run.subject.stop();
  await run.tick(30_000);
  assert.equal(run.checks(), 5, 'no check after stop');
  assert.equal(run.clock.pending, 0);
});

test('thresholds count in a row: a single pass or failure between does not flip the verdict', async () => {
  const run = checker({ successThreshold: 2, failureThreshold: 3 }, [undefined, 'x', undefined, undefined, 'y', 'y', undefined, 'y', 'y', 'y']);
  run.subject.start();
  await run.tick(0);
  for (let period = 0; period < 9; period++) await run.tick(10_000);
  assert.deepEqual(run.reports, [{ healthy: true }, { healthy: false, message: 'y' }]);
});

test('Envoy not ready fails the check before the probe runs, as Istio\'s EnvoyProber comes first', async () => {
  const run = checker({}, [undefined, undefined], ['Envoy is not ready: no LIVE epoch']);
  run.subject.start();
  await run.tick(0);
  assert.deepEqual(run.reports, [{ healthy: false, message: 'Envoy is not ready: no LIVE epoch' }]);
  assert.equal(run.checks(), 0);
  await run.tick(10_000);
  assert.deepEqual(run.reports.at(-1), { healthy: true });
});
