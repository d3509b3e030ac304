import assert from 'node:assert/strict';
import { test } from 'node:test';
import protoLoader from '@grpc/proto-loader';
import { decodeCertificateResponse, encodeCertificateRequest } from './ca-proto.ts';

// The reference: proto-loader (protobufjs) with the service's two messages as
// ca.proto declares them, plus unknown fields, so a wrong field number in
// our hand-written codec cannot pass both sides.
const definition = protoLoader.fromJSON({
  nested: {
    auth: {
      nested: {
        IstioCertificateRequest: { fields: { csr: { type: 'string', id: 1 }, validityDuration: { type: 'int64', id: 3 } } },
        IstioCertificateResponse: { fields: { certChain: { rule: 'repeated', type: 'string', id: 1 }, extra: { type: 'int64', id: 7 }, note: { type: 'string', id: 9 } } },
        IstioCertificateService: { methods: { CreateCertificate: { requestType: 'IstioCertificateRequest', responseType: 'IstioCertificateResponse', comment: '' } } },
      },
    },
  },
}, { longs: Number });
const method = (definition['auth.IstioCertificateService'] as Record<string, protoLoader.MethodDefinition<object, object>>).CreateCertificate!;

test('the request encodes as protobufjs reads it', () => {
  const decoded = method.requestDeserialize(encodeCertificateRequest({ csr: 'PEM…', validitySeconds: 86_400 }));
  assert.deepEqual({ ...decoded }, { csr: 'PEM…', validityDuration: 86_400 });
});

test('the response decodes what protobufjs encodes, unknown fields skipped', () => {
  const bytes = method.responseSerialize({ certChain: ['leaf', 'root'], extra: 300, note: 'x' });
  assert.deepEqual(decodeCertificateResponse(bytes), ['leaf', 'root']);
});

test('a truncated response is an error, not a short chain', () => {
  assert.throws(() => decodeCertificateResponse(Buffer.from([0x0a, 0x05, 0x61])), /truncated/);
});
