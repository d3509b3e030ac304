import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { encodeRequest, servingStatus } from './grpc-health.ts';

describe('grpc health messages', () => {
  it('encodes HealthCheckRequest.service as field 1', () => {
    assert.deepEqual(encodeRequest(''), Buffer.alloc(0));
    assert.deepEqual(encodeRequest('api'), Buffer.from([0x0a, 3, 0x61, 0x70, 0x69]));
    assert.deepEqual(encodeRequest('x'.repeat(200)).subarray(0, 3), Buffer.from([0x0a, 0xc8, 0x01]));
  });
  // Unframed: the gRPC framing (and its refusals) is grpc-js's.
  const cases: [string, Buffer, number][] = [
    ['SERVING', Buffer.from([0x08, 1]), 1],
    ['NOT_SERVING', Buffer.from([0x08, 2]), 2],
    ['an empty message (UNKNOWN)', Buffer.alloc(0), 0],
    ['another field', Buffer.from([0x10, 1]), 0],
  ];
  for (const [name, message, status] of cases) {
    it(`reads ${name}`, () => assert.equal(servingStatus(message), status));
  }
});
