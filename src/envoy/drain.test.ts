import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import type { AdminClient, AdminResult } from './admin.ts';
import { drainListeners } from './drain.ts';

/** Admin that records calls; a POST answers what `post` says (200 OK by default). */
function fakeAdmin(post: (path: string) => AdminResult = () => ({ ok: true, status: 200, body: 'OK' })) {
  const calls: string[] = [];
  const admin: AdminClient = {
    get: async (path) => (calls.push(`GET ${path}`), { ok: true, status: 200, body: '' }),
    post: async (path) => (calls.push(`POST ${path}`), post(path)),
  };
  return { admin, calls };
}

/** A logger that keeps its lines, to check which one a drain wrote. */
function linesLogger() {
  const lines: { level: number; msg: string; refused?: { path: string; answer: string }[] }[] = [];
  return { lines, logger: pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) }) };
}

describe('drainListeners', () => {
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
    it(`false, and one error line naming what Envoy refused: ${name}`, async () => {
      const admin: AdminClient = { get: async () => ({ ok: true, status: 200, body: '' }), post: async (path) => answer(path) };
      const { lines, logger } = linesLogger();
      assert.equal(await drainListeners({ admin, logger, signal: new AbortController().signal, inboundOnly: true }), false, 'the caller hears that Envoy refused');
      const errors = lines.filter((line) => line.level === 50);
      assert.equal(errors.length, 1, JSON.stringify(lines));
      assert.deepEqual(errors[0]!.refused!.map((entry) => entry.path), refusedPaths);
    });
  }

  it('true, with no error line, once Envoy accepted both calls; fails health checks first', async () => {
    const { admin, calls } = fakeAdmin();
    const { lines, logger } = linesLogger();
    assert.equal(await drainListeners({ admin, logger, signal: new AbortController().signal, inboundOnly: true }), true);
    assert.deepEqual(calls, ['POST /healthcheck/fail', 'POST /drain_listeners?graceful&inboundonly']);
    assert.equal(lines.filter((line) => line.level >= 50).length, 0);
  });
});

describe('drainListeners: the drain path and the refusal line', () => {
  it('says inbound only and skip_exit only when asked', async () => {
    const cases: { inboundOnly: boolean; skipExit?: boolean; want: string }[] = [
      { inboundOnly: true, want: '/drain_listeners?graceful&inboundonly' },
      { inboundOnly: false, want: '/drain_listeners?graceful' },
      { inboundOnly: false, skipExit: true, want: '/drain_listeners?graceful&skip_exit' },
      { inboundOnly: true, skipExit: true, want: '/drain_listeners?graceful&inboundonly&skip_exit' },
    ];
    for (const { inboundOnly, skipExit, want } of cases) {
      const { admin, calls } = fakeAdmin();
      assert.equal(await drainListeners({ admin, logger: pino({ level: 'silent' }), signal: new AbortController().signal, inboundOnly, skipExit }), true);
      assert.deepEqual(calls, ['POST /healthcheck/fail', `POST ${want}`]);
    }
  });

  it("puts what Envoy answered in the error's refused list", async () => {
    const { lines, logger } = linesLogger();
    const { admin } = fakeAdmin((path) =>
      path === '/healthcheck/fail' ? { ok: true, status: 404, body: ' no such path \n' } : { ok: false, error: 'ECONNREFUSED' },
    );
    assert.equal(await drainListeners({ admin, logger, signal: new AbortController().signal, inboundOnly: false }), false);
    const refused = [
      { path: '/healthcheck/fail', answer: '404 no such path' },
      { path: '/drain_listeners?graceful', answer: 'ECONNREFUSED' },
    ];
    assert.deepEqual(lines.map((line) => [line.msg, line.refused]), [['envoy did not start draining: admin drain call failed', refused]]);
  });
});
