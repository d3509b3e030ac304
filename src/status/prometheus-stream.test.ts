import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { it } from 'node:test';
import { fetchCapped, openStream } from './prometheus.ts';

/** A loopback server that answers `text` and records each request's headers; stopped by the stack. */
async function server(cleanup: AsyncDisposableStack, text: string): Promise<{ url: string; seen: IncomingHttpHeaders[] }> {
  const seen: IncomingHttpHeaders[] = [];
  const http = createServer((request, response) => {
    seen.push(request.headers);
    response.end(text);
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  cleanup.defer(() => new Promise<void>((resolve) => http.close(() => resolve())));
  return { url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/stats/prometheus`, seen };
}

/** A loopback port nothing listens on (taken, then given back). */
async function closedPort(): Promise<number> {
  const http = createServer();
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;
  await new Promise<void>((resolve) => http.close(() => resolve()));
  return port;
}

const textAccept = 'text/plain;version=0.0.4,*/*;q=0.1';

it('the streamed and the capped fetch ask for the text format, and hand its body on', async () => {
  await using cleanup = new AsyncDisposableStack();
  const { url, seen } = await server(cleanup, 'envoy_a 1\n');
  const streamed = await openStream(url, { timeoutMs: 10_000 });
  assert.ok(streamed.ok && streamed.status === 200);
  const chunks: Buffer[] = [];
  for await (const chunk of streamed.body) chunks.push(chunk);
  assert.equal(Buffer.concat(chunks).toString(), 'envoy_a 1\n');
  assert.deepEqual(await fetchCapped(url, { timeoutMs: 10_000, capBytes: 1024 }), { ok: true, status: 200, text: 'envoy_a 1\n', truncated: false });
  assert.deepEqual(seen.map((headers) => headers.accept), [textAccept, textAccept]);
});

it('nothing listening, over http or https: a failure named, never a throw', async () => {
  const port = await closedPort();
  for (const scheme of ['http', 'https']) {
    const url = `${scheme}://127.0.0.1:${port}/stats/prometheus`;
    const streamed = await openStream(url, { timeoutMs: 10_000 });
    assert.ok(!streamed.ok && /ECONNREFUSED/.test(streamed.error), `${scheme}: ${JSON.stringify(streamed)}`);
    const capped = await fetchCapped(url, { timeoutMs: 10_000, capBytes: 1024 });
    assert.ok(!capped.ok && /ECONNREFUSED/.test(capped.error), `${scheme}: ${JSON.stringify(capped)}`);
  }
});
