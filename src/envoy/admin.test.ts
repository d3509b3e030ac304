import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { within } from '../../test/support/within.ts';
import { adminClient, isLive, serverInfo, type AdminClient, type AdminResult } from './admin.ts';

/** An admin that answers every GET with `result`. */
const answering = (result: AdminResult): AdminClient => ({ get: async () => result, post: async () => result });

test('serverInfo: state, restart epoch, config path and version from /server_info; undefined when admin is not up or says nothing usable', async () => {
  const body = JSON.stringify({ state: 'LIVE', version: 'abc/1.40.0', command_line_options: { restart_epoch: 2, config_path: '/p/envoy-rev2.json' } });
  const cases: { name: string; result: AdminResult; want: unknown }[] = [
    {
      name: 'a LIVE Envoy',
      result: { ok: true, status: 200, body },
      want: { state: 'LIVE', epoch: 2, configPath: '/p/envoy-rev2.json', version: 'abc/1.40.0' },
    },
    {
      name: 'fields missing',
      result: { ok: true, status: 200, body: '{"state":"INITIALIZING","command_line_options":{}}' },
      want: { state: 'INITIALIZING', epoch: 0, configPath: '', version: '' },
    },
    { name: 'not 200', result: { ok: true, status: 503, body }, want: undefined },
    { name: 'no answer', result: { ok: false, error: 'ECONNREFUSED' }, want: undefined },
    { name: 'not JSON', result: { ok: true, status: 200, body: 'LIVE' }, want: undefined },
  ];
  for (const { name, result, want } of cases) assert.deepEqual(await serverInfo(answering(result)), want, name);
});

test('isLive: only admin /ready answering 200', async () => {
  const cases: { result: AdminResult; want: boolean }[] = [
    { result: { ok: true, status: 200, body: 'LIVE\n' }, want: true },
    { result: { ok: true, status: 503, body: 'PRE_INITIALIZING\n' }, want: false },
    { result: { ok: false, error: 'ECONNREFUSED' }, want: false },
  ];
  for (const { result, want } of cases) assert.equal(await isLive(answering(result)), want, JSON.stringify(result));
});

test('adminClient: GET and POST to 127.0.0.1 on its port, the status and body as values; a refused or silent port is an error value', async () => {
  await using cleanup = new AsyncDisposableStack();
  const hosts: (string | undefined)[] = [];
  const server = createServer((request, response) => {
    hosts.push(request.headers.host);
    if (request.url === '/silent') return;
    response.writeHead(request.method === 'POST' ? 201 : 200).end(`${request.method} ${request.url}`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanup.defer(() => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))));
  const port = (server.address() as AddressInfo).port;
  // A loaded machine may take a while to answer: only the silent path is asked with a short timeout.
  const admin = adminClient(port, { timeoutMs: 10_000 });
  assert.deepEqual(await admin.get('/ready'), { ok: true, status: 200, body: 'GET /ready' });
  assert.deepEqual(await admin.post('/healthcheck/fail'), { ok: true, status: 201, body: 'POST /healthcheck/fail' });
  assert.deepEqual(hosts, [`127.0.0.1:${port}`, `127.0.0.1:${port}`], 'addressed to 127.0.0.1 by default, not to a name to resolve');
  assert.equal((await adminClient(port, { timeoutMs: 200 }).get('/silent')).ok, false, 'a port that never answers ends at the timeout');
  const aborted = new AbortController();
  aborted.abort();
  assert.equal((await admin.get('/ready', aborted.signal)).ok, false, 'an aborted call is an error value');
  assert.equal((await adminClient(1).get('/ready')).ok, false, 'nothing listens on port 1');
});

test('adminClient: a body cut off mid-way is an error value, not a hang and not a short body taken as whole', async () => {
  await using cleanup = new AsyncDisposableStack();
  const server = createServer((_request, response) => {
    response.writeHead(200, { 'content-length': '100' });
    response.write('part of', () => response.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanup.defer(() => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))));
  const admin = adminClient((server.address() as AddressInfo).port, { timeoutMs: 10_000 });
  const result = await within(admin.get('/server_info'), 5_000, 'the cut-off answer to end the call');
  assert.equal(result.ok, false, JSON.stringify(result));
});
