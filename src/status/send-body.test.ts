import assert from 'node:assert/strict';
import { createServer, request, type Server } from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { createGzip, gunzipSync } from 'node:zlib';
import { streamTo } from './send-body.ts';

async function* chunks(count: number): AsyncGenerator<Buffer> {
  for (let index = 0; index < count; index++) yield Buffer.from(`line ${index}\n`);
}

describe('a streamed body', () => {
  let server: Server;
  let port = 0;
  const warnings: string[] = [];
  const onWarning = (warning: Error) => void warnings.push(warning.name);
  before(async () => {
    process.on('warning', onWarning);
    server = createServer((_request, response) => {
      // As many 'close' listeners as the status server puts on a response before it streams (slot, timer, gate, abort).
      for (let index = 0; index < 4; index++) response.once('close', () => undefined);
      response.setHeader('content-encoding', 'gzip');
      streamTo(response, [Buffer.from('head\n')], chunks(100)[Symbol.asyncIterator](), createGzip());
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    port = (server.address() as AddressInfo).port;
  });
  after(() => {
    process.off('warning', onWarning);
    server.close();
  });

  it('through gzip: the whole body arrives, and Node warns of no listener leak', async () => {
    const pending = new Promise<Buffer>((resolve, reject) => {
      request({ port, host: '127.0.0.1', path: '/' }, (response) => {
        const parts: Buffer[] = [];
        response.on('data', (part: Buffer) => parts.push(part));
        response.on('end', () => resolve(Buffer.concat(parts)));
      }).on('error', reject).end();
    });
    const body = gunzipSync(await pending).toString();
    assert.ok(body.startsWith('head\nline 0\n') && body.endsWith('line 99\n'));
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(warnings, []);
  });
});
