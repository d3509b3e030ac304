import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import type { IncomingHttpHeaders, OutgoingHttpHeaders, ServerHttp2Stream } from 'node:http2';
import { describe, it } from 'node:test';
import { GrpcServerCall, routeGrpcCall } from './server-call.ts';

/** What a handler did to the stream: headers sent (with endStream or not), trailers, end. */
class FakeStream extends EventEmitter {
  readonly sent: { headers: OutgoingHttpHeaders; endStream: boolean }[] = [];
  trailers: OutgoingHttpHeaders | undefined;
  ended = false;
  closed = false;
  destroyed = false;
  get headersSent(): boolean {
    return this.sent.length > 0;
  }
  respond(headers: OutgoingHttpHeaders, options: { endStream?: boolean; waitForTrailers?: boolean } = {}): void {
    this.sent.push({ headers, endStream: options.endStream === true });
  }
  end(): void {
    this.ended = true;
    this.emit('wantTrailers');
  }
  sendTrailers(trailers: OutgoingHttpHeaders): void {
    this.trailers = trailers;
  }
}

const grpcCall = (path: string): IncomingHttpHeaders => ({ ':method': 'POST', ':path': path, 'content-type': 'application/grpc' });
const asStream = (fake: FakeStream) => fake as unknown as ServerHttp2Stream;

describe('routeGrpcCall', () => {
  const served: string[] = [];
  const methods = new Map([['/pkg.Service/Method', () => void served.push('Method')]]);

  it('hands a gRPC call to its method', () => {
    const stream = new FakeStream();
    routeGrpcCall(asStream(stream), grpcCall('/pkg.Service/Method'), methods);
    assert.deepEqual(served, ['Method']);
    assert.deepEqual(stream.sent, []);
  });

  it('answers an unknown method UNIMPLEMENTED, Trailers-Only', () => {
    const stream = new FakeStream();
    routeGrpcCall(asStream(stream), grpcCall('/pkg.Service/Other'), methods);
    assert.deepEqual(stream.sent, [
      {
        headers: { ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '12', 'grpc-message': 'unknown method /pkg.Service/Other' },
        endStream: true,
      },
    ]);
  });

  it('answers what is not a gRPC call with HTTP 415', () => {
    for (const headers of [
      { ...grpcCall('/pkg.Service/Method'), ':method': 'GET' },
      { ...grpcCall('/pkg.Service/Method'), 'content-type': 'application/json' },
    ]) {
      const stream = new FakeStream();
      routeGrpcCall(asStream(stream), headers, methods);
      assert.deepEqual(stream.sent, [{ headers: { ':status': 415 }, endStream: true }]);
    }
    assert.deepEqual(served, ['Method']);
  });
});

describe('GrpcServerCall', () => {
  it('sends the status in trailers after the messages', () => {
    const stream = new FakeStream();
    const call = new GrpcServerCall(asStream(stream));
    call.respond();
    call.finish(14, 'the agent is stopping');
    assert.deepEqual(stream.sent, [{ headers: { ':status': 200, 'content-type': 'application/grpc' }, endStream: false }]);
    assert.deepEqual(stream.trailers, { 'grpc-status': '14', 'grpc-message': 'the agent is stopping' });
  });

  it('sends the status alone (Trailers-Only) when nothing was sent, the message percent-encoded', () => {
    const stream = new FakeStream();
    new GrpcServerCall(asStream(stream)).finish(14, 'down: 100%');
    assert.deepEqual(stream.sent, [
      { headers: { ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '14', 'grpc-message': 'down: 100%25' }, endStream: true },
    ]);
    assert.equal(stream.ended, false);
  });

  it('ends a stream closed without a status with OK', () => {
    const stream = new FakeStream();
    new GrpcServerCall(asStream(stream)).respond();
    stream.end();
    assert.deepEqual(stream.trailers, { 'grpc-status': '0' });
  });

  it('sends nothing on a stream already closed', () => {
    const stream = new FakeStream();
    stream.closed = true;
    const call = new GrpcServerCall(asStream(stream));
    call.respond();
    call.finish(14, 'late');
    assert.deepEqual(stream.sent, []);
    assert.equal(stream.trailers, undefined);
  });
});

describe('routeGrpcCall and GrpcServerCall on odd requests', () => {
  it('takes grpc+proto content types, refuses a missing content type, and names a missing path', () => {
    const served: string[] = [];
    const methods = new Map([['/pkg.Service/Method', () => void served.push('Method')]]);
    routeGrpcCall(asStream(new FakeStream()), { ...grpcCall('/pkg.Service/Method'), 'content-type': 'application/grpc+proto' }, methods);
    assert.deepEqual(served, ['Method']);
    const untyped = new FakeStream();
    routeGrpcCall(asStream(untyped), { ':method': 'POST', ':path': '/pkg.Service/Method' }, methods);
    assert.deepEqual(untyped.sent, [{ headers: { ':status': 415 }, endStream: true }]);
    const pathless = new FakeStream();
    routeGrpcCall(asStream(pathless), { ':method': 'POST', 'content-type': 'application/grpc' }, methods);
    assert.equal(pathless.sent[0]!.headers['grpc-message'], 'unknown method ');
    assert.deepEqual(served, ['Method']);
  });

  it('sends nothing on a destroyed stream, and the status given wins over OK in trailers', () => {
    const destroyed = new FakeStream();
    destroyed.destroyed = true;
    const call = new GrpcServerCall(asStream(destroyed));
    call.respond();
    call.finish(13, 'late');
    assert.deepEqual(destroyed.sent, []);
    const stream = new FakeStream();
    const finished = new GrpcServerCall(asStream(stream));
    finished.respond();
    finished.finish(0, '');
    assert.equal(stream.ended, true);
    assert.deepEqual(stream.trailers, { 'grpc-status': '0', 'grpc-message': '' });
  });
});
