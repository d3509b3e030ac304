import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FakeClock } from '../shared/clock.ts';
import { silentLogger } from '../shared/log.ts';
import type { AdminClient, AdminResult } from './admin.ts';
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

/** Runs the drain, moving the fake clock 500 ms at a time; returns the fake time it took. */
async function timeDrain(options: Partial<Parameters<typeof drainEnvoy>[0]> & { admin: AdminClient }): Promise<number> {
  const clock = new FakeClock();
  let done = false;
  const drained = drainEnvoy({ clock, logger: silentLogger, signal: new AbortController().signal, durationMs: 10_000, inboundOnly: true, ...options }).then(() => (done = true));
  while (!done) {
    await flush();
    if (!done) clock.advance(500);
  }
  await drained;
  return clock.now();
}

describe('drainEnvoy', () => {
  it('ends as soon as its signal is aborted mid-wait, with no fake time passing', async () => {
    const { admin } = fakeAdmin([]);
    const clock = new FakeClock();
    const controller = new AbortController();
    let done = false;
    const drained = drainEnvoy({ admin, clock, logger: silentLogger, signal: controller.signal, durationMs: 10_000, inboundOnly: true }).then(() => (done = true));
    await flush();
    assert.equal(done, false, 'draining');
    controller.abort();
    await drained;
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
});
