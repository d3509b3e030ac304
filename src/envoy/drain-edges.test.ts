import assert from 'node:assert/strict';
import { test } from 'node:test';
import { pino } from 'pino';
import { FakeClock } from '../shared/clock.ts';
import type { AdminClient, AdminResult } from './admin.ts';
import { drainEnvoy, drainListeners, type DrainOptions } from './drain.ts';

const flush = () => new Promise((resolve) => setImmediate(resolve));

/** Admin that records calls; /stats answers with the next body of a script (the last one stays). */
function scriptedAdmin(bodies: string[], post: (path: string) => AdminResult = () => ({ ok: true, status: 200, body: 'OK' })) {
  const calls: string[] = [];
  const admin: AdminClient = {
    get: async (path) => (calls.push(`GET ${path}`), { ok: true, status: 200, body: bodies.length > 1 ? bodies.shift()! : bodies[0] ?? '' }),
    post: async (path) => (calls.push(`POST ${path}`), post(path)),
  };
  return { admin, calls };
}

function linesLogger() {
  const lines: Record<string, unknown>[] = [];
  return { lines, logger: pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) }) };
}

/** Runs a drain on a fake clock moved 250 ms at a time (bounded); the fake time it took, the calls, the log. */
async function drain(options: Partial<DrainOptions>, admin = scriptedAdmin([])) {
  const clock = new FakeClock();
  const { lines, logger } = linesLogger();
  let done = false;
  const drained = drainEnvoy({
    admin: admin.admin,
    clock,
    logger,
    signal: new AbortController().signal,
    durationMs: 3000,
    inboundOnly: true,
    ...options,
  }).finally(() => (done = true));
  for (let step = 0; !done; step++) {
    if (step > 400) throw new Error(`the drain has not ended after ${clock.now()} ms of fake time`);
    await flush();
    if (!done) clock.advance(250);
  }
  return { started: await drained, tookMs: clock.now(), calls: admin.calls, lines };
}

const gauge = (count: number) => `listener.127.0.0.1_8443.downstream_cx_active: ${count}\n`;

test('drainListeners: the drain path says inbound only and skip_exit only when asked', async () => {
  const cases: { inboundOnly: boolean; skipExit?: boolean; want: string }[] = [
    { inboundOnly: true, want: '/drain_listeners?graceful&inboundonly' },
    { inboundOnly: false, want: '/drain_listeners?graceful' },
    { inboundOnly: false, skipExit: true, want: '/drain_listeners?graceful&skip_exit' },
    { inboundOnly: true, skipExit: true, want: '/drain_listeners?graceful&inboundonly&skip_exit' },
  ];
  for (const { inboundOnly, skipExit, want } of cases) {
    const { admin, calls } = scriptedAdmin([]);
    assert.equal(await drainListeners({ admin, logger: pino({ level: 'silent' }), signal: new AbortController().signal, inboundOnly, skipExit }), true);
    assert.deepEqual(calls, ['POST /healthcheck/fail', `POST ${want}`]);
  }
});

test("drainListeners: what Envoy answered, in the error's refused list", async () => {
  const { lines, logger } = linesLogger();
  const { admin } = scriptedAdmin([], (path) =>
    path === '/healthcheck/fail' ? { ok: true, status: 404, body: ' no such path \n' } : { ok: false, error: 'ECONNREFUSED' },
  );
  assert.equal(await drainListeners({ admin, logger, signal: new AbortController().signal, inboundOnly: false }), false);
  assert.deepEqual(
    lines.map((line) => [line.msg, line.refused]),
    [
      [
        'envoy did not start draining: admin drain call failed',
        [
          { path: '/healthcheck/fail', answer: '404 no such path' },
          { path: '/drain_listeners?graceful', answer: 'ECONNREFUSED' },
        ],
      ],
    ],
  );
});

test('drainEnvoy told to hurry before it began: no admin call, no wait, false', async () => {
  const { admin, calls } = scriptedAdmin([]);
  const stopped = new AbortController();
  stopped.abort();
  assert.equal(
    await drainEnvoy({ admin, clock: new FakeClock(), logger: pino({ level: 'silent' }), signal: stopped.signal, durationMs: 3000, inboundOnly: true }),
    false,
  );
  assert.deepEqual(calls, []);
});

test('the drain line says how long and whether it stops at zero connections', async () => {
  for (const exitOnZeroActiveConnections of [undefined, true]) {
    const { lines } = await drain({ exitOnZeroActiveConnections }, scriptedAdmin([gauge(0)]));
    const line = lines.find((entry) => entry.msg === 'draining listeners');
    assert.deepEqual(
      [line?.level, line?.durationMs, line?.exitOnZeroActiveConnections],
      [30, 3000, exitOnZeroActiveConnections === true],
      String(exitOnZeroActiveConnections),
    );
  }
});

test('exit-on-zero: no gauge at all stops at once after the minimum, saying the count is unknown', async () => {
  const { tookMs, lines } = await drain({ exitOnZeroActiveConnections: true, minDurationMs: 500 }, scriptedAdmin(['']));
  assert.equal(tookMs, 500);
  assert.equal(lines.find((line) => line.msg === 'no active downstream connections; stopping')?.activeConnections, 'unknown');
});

test('exit-on-zero: polls each second by default, logs the count it waits for, and says when the duration ran out', async () => {
  const { tookMs, calls, lines } = await drain({ exitOnZeroActiveConnections: true }, scriptedAdmin([gauge(4)]));
  assert.equal(tookMs, 3000);
  assert.equal(calls.filter((call) => call.startsWith('GET')).length, 3, 'at 0, 1000 and 2000 ms');
  assert.deepEqual(lines.filter((line) => line.msg === 'waiting for active downstream connections to close').map((line) => line.activeConnections), [4, 4, 4]);
  assert.equal(lines.at(-1)!.msg, 'drain duration over with connections still open; stopping');
  assert.equal(lines.at(-1)!.durationMs, 3000);
});

test('exit-on-zero: a minimum or a poll past the drain duration is cut to it', async () => {
  assert.equal((await drain({ exitOnZeroActiveConnections: true, minDurationMs: 60_000 }, scriptedAdmin([gauge(1)]))).tookMs, 3000);
  const { tookMs, calls } = await drain({ exitOnZeroActiveConnections: true, pollMs: 60_000 }, scriptedAdmin([gauge(1)]));
  assert.equal(tookMs, 3000);
  assert.equal(calls.filter((call) => call.startsWith('GET')).length, 1);
});

test('exit-on-zero: an abort in the minimum wait or between polls ends the drain there, with no further poll', async () => {
  for (const minDurationMs of [1000, 0]) {
    const { admin, calls } = scriptedAdmin([gauge(2)]);
    const clock = new FakeClock();
    const stop = new AbortController();
    const drained = drainEnvoy({
      admin,
      clock,
      logger: pino({ level: 'silent' }),
      signal: stop.signal,
      durationMs: 3000,
      inboundOnly: true,
      exitOnZeroActiveConnections: true,
      minDurationMs,
    });
    for (let i = 0; i < 5; i++) await flush();
    // Fires a zero minimum's timer only: the drain then polls once and waits for the next poll.
    clock.advance(0);
    for (let i = 0; i < 5; i++) await flush();
    stop.abort();
    assert.equal(await drained, true);
    assert.equal(calls.filter((call) => call.startsWith('GET')).length, minDurationMs > 0 ? 0 : 1, `minimum ${minDurationMs}`);
    assert.equal(clock.now(), 0);
  }
});
