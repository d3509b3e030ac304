import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { connect as connectHttp2, createServer as createHttp2Server, type ClientHttp2Session } from 'node:http2';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { within } from '../../../test/support/within.ts';
import { bindXdsSocket, type XdsSocket } from './xds-socket.ts';

/** An HTTP/2 server that never listens: it only takes the connections handed to it, and answers "pong:<body>". */
function echoServer() {
  const server = createHttp2Server();
  server.on('stream', (stream) => {
    let body = '';
    stream.on('data', (chunk: Buffer) => (body += chunk.toString()));
    stream.on('end', () => (stream.respond({ ':status': 200 }), stream.end(`pong:${body}`)));
  });
  return server;
}

/** Sends "ping" on a new HTTP/2 connection to `path`; resolves the answer's body. */
function ping(path: string, sessions: ClientHttp2Session[]): Promise<string> {
  const session = connectHttp2('http://xds', { createConnection: () => connect(path) });
  sessions.push(session);
  session.on('error', () => undefined);
  const request = session.request({ ':path': '/ping', ':method': 'POST' });
  request.end('ping');
  let body = '';
  request.on('data', (chunk: Buffer) => (body += chunk.toString()));
  return new Promise((resolve, reject) => (request.on('end', () => resolve(body)), request.on('error', reject)));
}

const closedSoon = (socket: Socket) => new Promise<void>((resolve) => socket.once('close', () => resolve()));

describe('the XDS socket bound before the relay loads', () => {
  let dir: string;
  let path: string;
  let socket: XdsSocket | undefined;
  const sessions: ClientHttp2Session[] = [];
  const sockets: Socket[] = [];

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'xds-socket-'));
    path = join(dir, 'XDS');
  });

  afterEach(async () => {
    for (const session of sessions.splice(0)) session.destroy();
    for (const client of sockets.splice(0)) client.destroy();
    await socket?.close();
    socket = undefined;
    await rm(dir, { recursive: true, force: true });
  });

  it('holds a connection made before the server loaded, and the server answers it once handed on', async () => {
    socket = await bindXdsSocket({ path, mode: 0o600, maxConnections: 4 });
    const answer = ping(path, sessions);
    await within(once(sessions[0]!, 'connect'), 5000, 'connected before the hand-over');
    socket.handTo(echoServer());
    assert.equal(await within(answer, 5000, 'the held request answered'), 'pong:ping');
    assert.equal(await within(ping(path, sessions), 5000, 'a later request answered'), 'pong:ping', 'later connections go straight on');
  });

  it('replaces the socket an earlier run left, and gives it its mode', async () => {
    // An agent killed with SIGKILL leaves its socket file behind.
    const leave = `require('node:net').createServer().listen(${JSON.stringify(path)}, () => process.kill(process.pid, 'SIGKILL'))`;
    assert.throws(() => execFileSync(process.execPath, ['-e', leave]), /SIGKILL/);
    assert.ok((await stat(path)).isSocket(), 'a leftover socket');
    socket = await bindXdsSocket({ path, mode: 0o640, maxConnections: 4 });
    assert.equal((await stat(path)).mode & 0o777, 0o640);
    socket.handTo(echoServer());
    assert.equal(await within(ping(path, sessions), 5000, 'answered on the new socket'), 'pong:ping');
  });

  it('refuses a path that is not a socket, naming --configPath', async () => {
    await writeFile(path, 'not a socket');
    await assert.rejects(bindXdsSocket({ path, mode: 0o600, maxConnections: 4 }), (error: Error & { code?: string }) => {
      assert.equal(error.code, 'BAD_FLAG');
      assert.match(error.message, /--configPath: .*XDS exists and is not a socket \(a file\)/);
      return true;
    });
  });

  it('holds at most maxConnections before the hand-over; close drops the held ones and removes the socket', async () => {
    socket = await bindXdsSocket({ path, mode: 0o600, maxConnections: 2 });
    const closes: Promise<void>[] = [];
    for (let index = 0; index < 3; index++) {
      const client = connect(path);
      sockets.push(client);
      client.on('error', () => undefined);
      closes.push(closedSoon(client));
    }
    await within(closes[2]!, 5000, 'the third connection refused');
    await socket.close();
    await within(Promise.all(closes), 5000, 'the held connections dropped');
    assert.equal(existsSync(path), false, 'socket file removed');
    await socket.close(); // a second close is the same close
  });
});
