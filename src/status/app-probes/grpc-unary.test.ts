import assert from 'node:assert/strict';
import { connect, createServer, type Http2Server, type ServerHttp2Stream } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { frame } from '../../xds/grpc-frame.ts';
import { unaryCall, type UnaryCallOptions } from './grpc-unary.ts';

/** How the test server answers each path. */
const behaviours: Record<string, (stream: ServerHttp2Stream, request: Buffer) => void> = {
  '/echo': (stream, request) => {
    stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
    stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
    stream.end(frame(request.subarray(5)));
  },
  '/refuse': (stream) => stream.respond({ ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '16', 'grpc-message': 'no%20token' }, { endStream: true }),
  '/huge': (stream) => {
    stream.respond({ ':status': 200, 'content-type': 'application/grpc' });
    stream.end(frame(Buffer.alloc(4096)));
  },
  '/reset': (stream) => stream.close(2),
  '/silent': () => undefined,
};

describe('unaryCall: one gRPC call on node:http2, failures as outcomes', () => {
  let server: Http2Server;
  let port: number;

  before(async () => {
    server = createServer();
    server.on('stream', (stream, headers) => {
      const chunks: Buffer[] = [];
      stream.on('error', () => undefined); // the client hangs up on purpose in some cases
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => behaviours[String(headers[':path'])]!(stream, Buffer.concat(chunks)));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const call = (path: string, options: Partial<UnaryCallOptions> = {}) =>
    unaryCall({ session: connect(`http://127.0.0.1:${port}`), path, request: Buffer.from('hello'), maxAnswerBytes: 1024, signal: new AbortController().signal, ...options });

  it('an answer and status 0', async () => {
    const outcome = await call('/echo');
    assert.equal(outcome.kind, 'status');
    assert.ok(outcome.kind === 'status');
    assert.equal(outcome.code, 0);
    assert.deepEqual(outcome.answers.map(String), ['hello']);
  });

  it('a refusal in the headers alone (Trailers-Only), its message decoded', async () => {
    assert.deepEqual(await call('/refuse'), { kind: 'status', code: 16, message: 'no token', answers: [] });
  });

  it('an answer over the cap is a protocol failure', async () => {
    const outcome = await call('/huge');
    assert.ok(outcome.kind === 'failed' && outcome.stage === 'protocol', JSON.stringify(outcome));
  });

  it('a stream reset without a status is a failure, not a hang', async () => {
    const outcome = await call('/reset');
    assert.equal(outcome.kind, 'failed');
  });

  it('an abort ends a call the server never answers', async () => {
    const controller = new AbortController();
    const pending = call('/silent', { signal: controller.signal });
    controller.abort();
    const outcome = await pending;
    assert.ok(outcome.kind === 'failed' && outcome.stage === 'aborted', JSON.stringify(outcome));
  });

  it('nobody listening is a connect failure', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const deadPort = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const outcome = await unaryCall({ session: connect(`http://127.0.0.1:${deadPort}`), path: '/echo', request: Buffer.alloc(0), maxAnswerBytes: 1024, signal: new AbortController().signal });
    assert.ok(outcome.kind === 'failed' && outcome.stage === 'connect', JSON.stringify(outcome));
  });
});
