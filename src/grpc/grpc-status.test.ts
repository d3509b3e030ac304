import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decodeGrpcMessage, encodeGrpcMessage, GrpcStatus, statusFromHeaders, statusName } from './grpc-status.ts';

describe('grpc-status', () => {
  it('percent-encodes grpc-message and reads it back', () => {
    const cases: [string, string][] = [
      ['plain text: ok', 'plain text: ok'],
      ['100% sure', '100%25 sure'],
      ['line\nbreak', 'line%0Abreak'],
      ['café', 'caf%C3%A9'],
      ['tab\there', 'tab%09here'],
      ['\x1f \x7e\x7f', '%1F ~%7F'],
      ['', ''],
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
    assert.deepEqual(statusFromHeaders({ 'grpc-status': '0' }), { code: 0, message: '' });
    assert.deepEqual(
      statusFromHeaders({ 'grpc-status': '13', 'grpc-message': ['a', 'b'] }),
      { code: 13, message: '' },
      'a repeated grpc-message is no message',
    );
    assert.equal(statusFromHeaders({ 'grpc-status': ['0', '1'] }), undefined, 'a repeated grpc-status is no status');
    assert.deepEqual(Object.entries(GrpcStatus).map(([name, code]) => statusName(code) === name), Object.keys(GrpcStatus).map(() => true));
  });
});
