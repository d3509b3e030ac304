import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { AdminClient, AdminResult } from './admin.ts';
import { activeConnections, activeConnectionsPath, sumActiveConnections } from './active-connections.ts';

test('sumActiveConnections: lines that are not a listener gauge, or not a whole number, count for nothing; port 0 ignores nothing', () => {
  const cases: { name: string; text: string; ignored?: number[]; want: number | undefined }[] = [
    { name: 'no value', text: 'listener.127.0.0.1_8443.downstream_cx_active\n', want: undefined },
    { name: 'not a number', text: 'listener.127.0.0.1_8443.downstream_cx_active: many\n', want: undefined },
    { name: 'a fraction', text: 'listener.127.0.0.1_8443.downstream_cx_active: 1.5\n', want: undefined },
    { name: 'spaces around the value', text: 'listener.127.0.0.1_8443.downstream_cx_active:  2 \n', want: 2 },
    { name: 'another listener stat', text: 'listener.127.0.0.1_8443.downstream_cx_total: 9\n', want: undefined },
    { name: 'not a listener', text: 'cluster.x.downstream_cx_active: 9\n', want: undefined },
    { name: 'port 0 in the ignored list', text: 'listener.127.0.0.1_0.downstream_cx_active: 1\n', ignored: [0], want: 1 },
    {
      name: 'an ignored port only as a suffix of the address',
      text: 'listener.127.0.0.1_15090.downstream_cx_active: 1\nlistener.127.0.0.1_5090.downstream_cx_active: 2\n',
      ignored: [5090],
      want: 1,
    },
  ];
  for (const { name, text, ignored, want } of cases) assert.equal(sumActiveConnections(text, ignored), want, name);
});

test('activeConnections asks admin for the gauges; undefined when admin does not answer 200', async () => {
  const asked: string[] = [];
  const admin = (result: AdminResult): AdminClient => ({ get: async (path) => (asked.push(path), result), post: async () => result });
  assert.equal(await activeConnections(admin({ ok: true, status: 200, body: 'listener.127.0.0.1_80.downstream_cx_active: 3\n' }), []), 3);
  assert.equal(await activeConnections(admin({ ok: true, status: 503, body: 'listener.127.0.0.1_80.downstream_cx_active: 3\n' }), []), undefined);
  assert.equal(await activeConnections(admin({ ok: false, error: 'ECONNREFUSED' }), []), undefined);
  assert.equal(await activeConnections(admin({ ok: true, status: 200, body: 'listener.127.0.0.1_80.downstream_cx_active: 3\n' }), [80]), undefined);
  assert.deepEqual(new Set(asked), new Set(['/stats?usedonly&filter=downstream_cx_active$']));
  assert.equal(activeConnectionsPath, '/stats?usedonly&filter=downstream_cx_active$');
});
