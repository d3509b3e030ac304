import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { FetchRefused, httpGet, spokePlainHttp } from './http-get.ts';
import { parseCidrs } from '../shared/cidr.ts';

/** A loopback server that answers each path from a table, recording what it was asked with. */
interface Peer {
  base: string;
  seen: { path: string; headers: IncomingHttpHeaders }[];
  routes: Map<string, (response: ServerResponse) => void>;
  server: Server;
}

async function startPeer(): Promise<Peer> {
  const peer = { base: '', seen: [], routes: new Map(), server: createServer() } as Peer;
  peer.server.on('request', (request, response) => {
    peer.seen.push({ path: request.url ?? '', headers: request.headers });
    const route = peer.routes.get(request.url ?? '');
    if (route) return route(response);
    response.writeHead(404).end();
  });
  await new Promise<void>((resolve) => peer.server.listen(0, '127.0.0.1', resolve));
  peer.base = `http://127.0.0.1:${(peer.server.address() as AddressInfo).port}`;
  return peer;
}

const redirect = (status: number, location: string) => (response: ServerResponse) => response.writeHead(status, { location }).end();
const body =
  (status: number, text: string, headers: Record<string, string> = {}) =>
  (response: ServerResponse) =>
    response.writeHead(status, headers).end(text);

describe('httpGet against loopback servers: redirects, credentials, bounds', () => {
  let a: Peer;
  let b: Peer;
  before(async () => {
    [a, b] = await Promise.all([startPeer(), startPeer()]);
  });
  after(async () => {
    for (const peer of [a, b]) {
      peer.server.closeAllConnections();
      await new Promise((resolve) => peer.server.close(resolve));
    }
  });
  const options = { timeoutMs: 2000, maxBytes: 64 };

  it('keeps Authorization on a same-origin redirect and drops it on a cross-origin one', async () => {
    a.seen.length = b.seen.length = 0;
    a.routes.set('/start', redirect(301, '/same'));
    a.routes.set('/same', redirect(302, `${b.base}/other`));
    b.routes.set('/other', body(200, 'module'));
    const answer = await httpGet(`${a.base}/start`, { ...options, headers: { authorization: 'Bearer secret', accept: 'x/y' } });
    assert.equal(answer.status, 200);
    assert.equal(answer.body.toString(), 'module');
    assert.equal(answer.url, `${b.base}/other`);
    assert.deepEqual(a.seen.map((hop) => [hop.path, hop.headers.authorization]), [['/start', 'Bearer secret'], ['/same', 'Bearer secret']]);
    assert.deepEqual(b.seen.map((hop) => [hop.path, hop.headers.authorization, hop.headers.accept]), [['/other', undefined, 'x/y']]);
  });

  it('a redirect back to the first origin after a cross-origin hop still carries no credentials', async () => {
    a.seen.length = b.seen.length = 0;
    a.routes.set('/out', redirect(307, `${b.base}/back`));
    b.routes.set('/back', redirect(308, `${a.base}/home`));
    a.routes.set('/home', body(200, 'ok'));
    await httpGet(`${a.base}/out`, { ...options, headers: { authorization: 'Basic x' } });
    assert.deepEqual(a.seen.map((hop) => hop.headers.authorization), ['Basic x', undefined]);
  });

  it('a redirect loop stops after five redirects (six requests), naming the URL', async () => {
    a.seen.length = 0;
    a.routes.set('/loop', redirect(302, '/loop'));
    await assert.rejects(httpGet(`${a.base}/loop`, options), { message: `${a.base}/loop: more than 5 redirects` });
    assert.equal(a.seen.length, 6);
  });

  it('five redirects are followed', async () => {
    for (let hop = 0; hop < 5; hop++) a.routes.set(`/hop${hop}`, redirect(302, `/hop${hop + 1}`));
    a.routes.set('/hop5', body(200, 'end'));
    assert.equal((await httpGet(`${a.base}/hop0`, options)).body.toString(), 'end');
  });

  it('answers outside 3xx, 304 and a 3xx without Location are returned, not followed', async () => {
    const table: [number, Record<string, string>][] = [
      [200, { location: '/x' }],
      [299, { location: '/x' }],
      [304, { location: '/x' }],
      [302, {}],
      [400, { location: '/x' }],
    ];
    for (const [status, headers] of table) {
      a.seen.length = 0;
      a.routes.set('/answer', body(status, 'b', headers));
      const answer = await httpGet(`${a.base}/answer`, options);
      assert.equal(answer.status, status);
      assert.equal(a.seen.length, 1, `status ${status} is not followed`);
    }
    a.routes.set('/three', body(300, '', { location: '/answer' }));
    a.routes.set('/answer', body(200, 'followed'));
    assert.equal((await httpGet(`${a.base}/three`, options)).body.toString(), 'followed');
  });

  it('a body past maxBytes is an error (a huge manifest or layer); maxBytes itself is read', async () => {
    a.routes.set('/huge', body(200, 'x'.repeat(65)));
    a.routes.set('/full', body(200, 'x'.repeat(64)));
    await assert.rejects(httpGet(`${a.base}/huge`, options), { message: `${a.base}/huge: body larger than 64 bytes` });
    assert.equal((await httpGet(`${a.base}/full`, options)).body.length, 64);
  });

  it('a server that never answers is cut off at the timeout', async () => {
    a.routes.set('/silent', () => {});
    await assert.rejects(httpGet(`${a.base}/silent`, { ...options, timeoutMs: 150 }), { message: `${a.base}/silent: no answer within 150 ms` });
  });

  it('a body that trickles in under the idle timeout is still cut off when the whole request takes too long', async () => {
    let trickle: NodeJS.Timeout | undefined;
    a.routes.set('/trickle', (response) => {
      response.writeHead(200);
      trickle = setInterval(() => response.write('x'), 20);
      response.on('close', () => clearInterval(trickle));
    });
    await assert.rejects(httpGet(`${a.base}/trickle`, { ...options, maxBytes: 1 << 20, timeoutMs: 150 }), {
      message: `${a.base}/trickle: no answer within 150 ms`,
    });
    clearInterval(trickle);
  });

  it('a body past maxBytes closes the connection; a body cut short by the server is an error', async () => {
    let closed!: Promise<void>;
    a.routes.set('/endless', (response) => {
      closed = new Promise((resolve) => response.on('close', resolve));
      response.writeHead(200).write('x'.repeat(65)); // and never ends: only our side can close it
    });
    await assert.rejects(httpGet(`${a.base}/endless`, options), /body larger than 64 bytes/);
    await closed;
    a.routes.set('/cut', (response) => {
      response.writeHead(200, { 'content-length': '64' }).write('x'.repeat(10));
      setImmediate(() => response.socket?.destroy());
    });
    await assert.rejects(httpGet(`${a.base}/cut`, options), /aborted/);
  });

  it('leaves no timer behind once answered', async () => {
    a.routes.set('/quick', body(200, 'ok'));
    const timers = () => process.getActiveResourcesInfo().filter((name) => name === 'Timeout').length;
    const before = timers();
    await httpGet(`${a.base}/quick`, { ...options, timeoutMs: 60_000 });
    for (let turn = 0; turn < 20 && timers() > before; turn++) await nextTurn(); // the sockets close just after the answer
    assert.equal(timers(), before);
  });

  it('empty header values are not sent', async () => {
    a.seen.length = 0;
    a.routes.set('/h', body(200, ''));
    await httpGet(`${a.base}/h`, { ...options, headers: { authorization: '', 'x-kept': 'v' } });
    assert.equal(a.seen[0]!.headers.authorization, undefined);
    assert.equal(a.seen[0]!.headers['x-kept'], 'v');
  });

  it('only http and https are fetched, also after a redirect', async () => {
    await assert.rejects(httpGet('ftp://127.0.0.1/m.wasm', options), { message: 'ftp://127.0.0.1/m.wasm: only http and https are fetched' });
    a.routes.set('/to-file', redirect(302, 'file:///etc/passwd'));
    await assert.rejects(httpGet(`${a.base}/to-file`, options), /file:\/\/\/etc\/passwd: only http and https are fetched/);
  });

  it('refuses metadata addresses as literals, through a redirect and by name via BLOCKED_CIDRS_IN_WASM_FETCH', async () => {
    a.seen.length = 0;
    for (const url of ['http://169.254.169.254/latest', 'http://[::ffff:169.254.169.254]/', 'http://[fe80::1]/']) {
      await assert.rejects(httpGet(url, options), (error: Error) => error instanceof FetchRefused && /link-local and cloud metadata/.test(error.message), url);
    }
    a.routes.set('/meta', redirect(302, 'http://169.254.169.254/latest/meta-data'));
    await assert.rejects(httpGet(`${a.base}/meta`, options), FetchRefused);
    const blocked = parseCidrs('127.0.0.0/8,::1/128');
    await assert.rejects(httpGet(`${a.base}/h`, { ...options, blocked }), FetchRefused);
    const port = new URL(a.base).port;
    await assert.rejects(
      httpGet(`http://localhost:${port}/h`, { ...options, blocked }),
      (error: Error) => error instanceof FetchRefused && error.message.startsWith('localhost: connection to '),
    );
    assert.equal(a.seen.length, 1, 'only the redirecting hop reached the server');
    assert.equal((await httpGet(`http://localhost:${port}/h`, options)).status, 200, 'by name without a block list');
  });

  it('a name that does not resolve fails with the resolver\'s error', async () => {
    await assert.rejects(
      httpGet('http://no-such-host.invalid/m.wasm', options),
      (error: Error) => !(error instanceof FetchRefused) && /ENOTFOUND|EAI_AGAIN/.test(String((error as NodeJS.ErrnoException).code)),
    );
  });
});

describe('spokePlainHttp', () => {
  const table: [unknown, boolean][] = [
    [Object.assign(new Error('x'), { code: 'ERR_SSL_WRONG_VERSION_NUMBER' }), true],
    [new Error('ssl3_get_record:wrong version number'), true],
    [new Error('packet length too long'), true],
    [new Error('SSL routines:http request'), true],
    [Object.assign(new Error('connect refused'), { code: 'ECONNREFUSED' }), false],
    [undefined, false],
  ];
  for (const [error, expected] of table) it(`${String((error as Error)?.message)} → ${expected}`, () => assert.equal(spokePlainHttp(error), expected));
});
