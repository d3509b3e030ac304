import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decodeGrpcMessage, encodeGrpcMessage, statusFromHeaders, statusName } from './grpc-status.ts';

describe('grpc-status', () => {
  it('percent-encodes grpc-message and reads it back', () => {
    const cases: [string, string][] = [
      ['plain text: ok', 'plain text: ok'],
      ['100% sure', '100%25 sure'],
      ['line\nbreak', 'line%0Abreak'],
      ['café', 'caf%C3%A9'],
    ];
    for (const [text, encoded] of cases) {
      assert.equal(encodeGrpcMessage(text), encoded);
      assert.equal(decodeGrpcMessage(encoded), text);
    }
    assert.equal(decodeGrpcMessage('bad %zz'), 'bad %zz');
  });

  it('names codes and reads a status from headers', () => {
    assert.equal(statusName(14), 'UNAVAILABLE');
    assert.equal(statusName(99), '99');
    assert.deepEqual(statusFromHeaders({ 'grpc-status': '16', 'grpc-message': 'no%20token' }), { code: 16, message: 'no token' });
    assert.equal(statusFromHeaders({ ':status': '200' }), undefined);
  });
});
