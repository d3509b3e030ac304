import assert from 'node:assert/strict';
import { test } from 'node:test';
import pino from 'pino';
import type { HealthReport } from '../discovery/consumers.ts';
import { FakeClock } from '../shared/clock.ts';
import { HealthChecker } from './checker.ts';

const settle = () => new Promise((resolve) => setImmediate(resolve));
const config = { action: { kind: 'exec' as const, command: ['true'], timeoutMs: 1000 }, initialDelayMs: 0, periodMs: 10_000, successThreshold: 1, failureThreshold: 1 };

test('without an Envoy prober (a proxyless agent) the probe alone decides, and each verdict is logged at info with its reason', async () => {
  const clock = new FakeClock();
  const reports: HealthReport[] = [];
  const lines: Record<string, unknown>[] = [];
  const verdicts = [undefined, 'connection refused'];
  const subject = new HealthChecker({
    config: { ...config, initialDelayMs: 2_000, periodMs: 3_000 },
    probe: async () => verdicts.shift(),
    report: (report) => void reports.push(report),
    clock,
    logger: pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) }),
  });
  subject.start();
  assert.deepEqual(lines.map(({ level, msg, kind, initialDelayMs, periodMs }) => ({ level, msg, kind, initialDelayMs, periodMs })), [
    { level: 30, msg: 'workload health checks start', kind: 'exec', initialDelayMs: 2_000, periodMs: 3_000 },
  ]);
  clock.advance(2_000);
  await settle();
  clock.advance(3_000);
  await settle();
  subject.stop();
  assert.deepEqual(reports, [{ healthy: true }, { healthy: false, message: 'connection refused' }]);
  assert.deepEqual(lines.slice(1).map(({ level, msg, reason }) => ({ level, msg, reason })), [
    { level: 30, msg: 'workload healthy: success threshold reached', reason: undefined },
    { level: 30, msg: 'workload unhealthy: failure threshold reached', reason: 'connection refused' },
  ]);
});

test('a verdict that arrives after stop is dropped, and no further check is armed', async () => {
  const clock = new FakeClock();
  const reports: HealthReport[] = [];
  let answer: (verdict: string | undefined) => void = () => undefined;
  let checks = 0;
  const subject = new HealthChecker({
    config,
    probe: () => (checks++, new Promise((resolve) => (answer = resolve))),
    report: (report) => void reports.push(report),
    clock,
    logger: pino({ level: 'silent' }),
  });
  subject.start();
  clock.advance(0);
  await settle();
  assert.equal(checks, 1, 'the first check is under way');
  subject.stop();
  answer(undefined);
  await settle();
  assert.deepEqual(reports, [], 'stopped: the late pass is not reported');
  assert.equal(clock.pending, 0, 'stopped: nothing re-armed');
  clock.advance(60_000);
  await settle();
  assert.equal(checks, 1);
});

test('stop before the initial delay has passed: no check ever runs', async () => {
  const clock = new FakeClock();
  let checks = 0;
  const subject = new HealthChecker({
    config: { ...config, initialDelayMs: 5_000 },
    probe: async () => (checks++, undefined),
    report: () => assert.fail('no verdict after stop'),
    clock,
    logger: pino({ level: 'silent' }),
  });
  subject.start();
  subject.stop();
  assert.equal(clock.pending, 0, 'the initial delay\'s timer is cancelled');
  clock.advance(60_000);
  await settle();
  assert.equal(checks, 0);
});

test('the first healthy verdict waits for successThreshold passes in a row, as later ones do', async () => {
  const clock = new FakeClock();
  const reports: HealthReport[] = [];
  const subject = new HealthChecker({
    config: { ...config, successThreshold: 3 },
    probe: async () => undefined,
    report: (report) => void reports.push(report),
    clock,
    logger: pino({ level: 'silent' }),
  });
  subject.start();
  clock.advance(0);
  await settle();
  clock.advance(10_000);
  await settle();
  assert.deepEqual(reports, [], 'two passes of three: no verdict yet');
  clock.advance(10_000);
  await settle();
  assert.deepEqual(reports, [{ healthy: true }]);
  subject.stop();
});

test('stop on a checker that never started (a shutdown before the probe began) is harmless', () => {
  const subject = new HealthChecker({
    config, probe: async () => undefined, report: () => undefined, clock: new FakeClock(), logger: pino({ level: 'silent' }),
  });
  assert.doesNotThrow(() => subject.stop());
});

test('disposing the checker (a recipe\'s stack unwinding) stops it: no check after', async () => {
  const clock = new FakeClock();
  let checks = 0;
  {
    await using subject = new HealthChecker({ config: { ...config, initialDelayMs: 1_000 }, probe: async () => (checks++, undefined), report: () => undefined, clock, logger: pino({ level: 'silent' }) });
    subject.start();
  }
  assert.equal(clock.pending, 0);
  clock.advance(60_000);
  await settle();
  assert.equal(checks, 0);
});
