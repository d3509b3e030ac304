import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import { FakeClock } from '../shared/clock.ts';
import { silentLogger } from '../shared/log.ts';
import type { AdminClient, AdminResult } from './admin.ts';
import { within } from '../../test/support/within.ts';
import { drainEnvoy } from './drain.ts';

const flush = () => new Promise((resolve) => setImmediate(resolve));

/** Admin that records calls and answers /stats with the next count of a script. */
function fakeAdmin(counts: number[]) {
  const calls: string[] = [];
  const ok = (body: string): AdminResult => ({ ok: true, status: 200, body });
  const admin: AdminClient = {
    get: async (path) => (calls.push(`GET ${path}`), ok(`listener.127.0.0.1_8443.downstream_cx_active: ${counts.shift() ?? 0}\n`)),
    post: async (path) => (calls.push(`POST ${path}`), ok('OK')),
  };
  return { admin, calls };
}

/** A logger that keeps its lines, to check which one a drain wrote. */
function linesLogger() {
  const lines: { level: number; msg: string; refused?: { path: string; answer: string }[] }[] = [];
  return { lines, logger: pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) }) };
}

/** Runs the drain, moving the fake clock 500 ms at a time; returns the fake time it took. */
async function timeDrain(options: Partial<Parameters<typeof drainEnvoy>[0]> & { admin: AdminClient }): Promise<number> {
  return (await runDrain(options)).tookMs;
}

/** The same, with whether Envoy took the drain calls. */
async function runDrain(options: Partial<Parameters<typeof drainEnvoy>[0]> & { admin: AdminClient }): Promise<{ tookMs: number; started: boolean }> {
  const clock = new FakeClock();
  let done = false;
  const drained = drainEnvoy({ clock, logger: silentLogger, signal: new AbortController().signal, durationMs: 10_000, inboundOnly: true, ...options }).finally(
    () => (done = true),
  );
  // Bounded: a drain that never ends fails here by name, not at the runner's timeout.
  for (let step = 0; !done; step++) {
    if (step > 1000) throw new Error(`drainEnvoy has not ended after ${clock.now()} ms of fake time (durationMs ${options.durationMs ?? 10_000})`);
    await flush();
    if (!done) clock.advance(500);
  }
  const started = await drained;
  return { tookMs: clock.now(), started };
}

describe('drainEnvoy', () => {
  it('ends as soon as its signal is aborted mid-wait, with no fake time passing', async () => {
    const { admin } = fakeAdmin([]);
    const clock = new FakeClock();
    const controller = new AbortController();
    let done = false;
    const drained = drainEnvoy({ admin, clock, logger: silentLogger, signal: controller.signal, durationMs: 10_000, inboundOnly: true }).then(
      () => (done = true),
    );
    await flush();
    assert.equal(done, false, 'draining');
    controller.abort();
    await within(drained, 5000, 'the drain to end on its aborted signal');
    assert.equal(clock.now(), 0);
  });

  it('fails health checks, drains inbound listeners gracefully, waits the whole duration', async () => {
    const { admin, calls } = fakeAdmin([]);
    assert.equal(await timeDrain({ admin }), 10_000);
    assert.deepEqual(calls, ['POST /healthcheck/fail', 'POST /drain_listeners?graceful&inboundonly']);
  });

  it('with exit-on-zero: waits the minimum, then stops once connections reach zero', async () => {
    const { admin, calls } = fakeAdmin([2, 1, 0]);
    const took = await timeDrain({ admin, exitOnZeroActiveConnections: true, minDurationMs: 2000, pollMs: 1000 });
    assert.equal(took, 4000);
    assert.equal(calls.filter((call) => call.startsWith('GET')).length, 3);
  });

  it('with exit-on-zero: the drain duration still bounds the wait', async () => {
    const { admin } = fakeAdmin(Array(100).fill(5));
    assert.equal(await timeDrain({ admin, exitOnZeroActiveConnections: true, minDurationMs: 1000, pollMs: 1000 }), 10_000);
  });

  const okAnswer: AdminResult = { ok: true, status: 200, body: 'OK' };
  const drainPath = '/drain_listeners?graceful&inboundonly';
  const refusals: [string, (path: string) => AdminResult, string[]][] = [
    ['admin unreachable', () => ({ ok: false, error: 'ECONNREFUSED' }), ['/healthcheck/fail', drainPath]],
    [
      '/healthcheck/fail answered 404',
      (path) => (path === '/healthcheck/fail' ? { ok: true, status: 404, body: 'no such path' } : okAnswer),
      ['/healthcheck/fail'],
    ],
    ['/drain_listeners answered 400', (path) => (path === drainPath ? { ok: true, status: 400, body: 'bad request' } : okAnswer), [drainPath]],
  ];
  for (const [name, answer, refusedPaths] of refusals) {
    it(`logs an error naming what Envoy refused, not "draining listeners": ${name}`, async () => {
      const admin: AdminClient = { get: async () => ({ ok: true, status: 200, body: '' }), post: async (path) => answer(path) };
      const { lines, logger } = linesLogger();
      assert.equal((await runDrain({ admin, logger, durationMs: 1000 })).started, false, 'the caller hears that Envoy refused');
      assert.equal(lines.find((line) => line.msg === 'draining listeners'), undefined, 'no claim that Envoy drains');
      const errors = lines.filter((line) => line.level === 50);
      assert.equal(errors.length, 1, JSON.stringify(lines));
      assert.deepEqual(errors[0]!.refused!.map((entry) => entry.path), refusedPaths);
    });
  }

  it('logs "draining listeners" once Envoy accepted both calls', async () => {
    const { admin } = fakeAdmin([]);
    const { lines, logger } = linesLogger();
    assert.equal((await runDrain({ admin, logger, durationMs: 1000 })).started, true);
    assert.equal(lines.filter((line) => line.msg === 'draining listeners').length, 1);
    assert.equal(lines.filter((line) => line.level >= 50).length, 0);
  });
});
