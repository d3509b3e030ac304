import assert from 'node:assert/strict';
import { test } from 'node:test';
import protoLoader from '@grpc/proto-loader';
import { decodeCertificateResponse, encodeCertificateRequest } from './ca-proto.ts';

// The reference: proto-loader (protobufjs) with the service's two messages as
// ca.proto declares them, plus unknown fields, so a wrong field number in
// our hand-written codec cannot pass both sides.
const definition = protoLoader.fromJSON(
  {
    nested: {
      auth: {
        nested: {
          IstioCertificateRequest: {
            fields: { csr: { type: 'string', id: 1 }, validityDuration: { type: 'int64', id: 3 }, metadata: { type: 'Struct', id: 4 } },
          },
          // A map field, as protobufjs's JSON descriptors write one.
          Struct: { fields: { fields: { keyType: 'string', type: 'Value', id: 1 } as { type: string; id: number } } },
          Value: { oneofs: { kind: { oneof: ['stringValue'] } }, fields: { stringValue: { type: 'string', id: 3 } } },
          IstioCertificateResponse: {
            fields: { certChain: { rule: 'repeated', type: 'string', id: 1 }, extra: { type: 'int64', id: 7 }, note: { type: 'string', id: 9 } },
          },
          IstioCertificateService: {
            methods: { CreateCertificate: { requestType: 'IstioCertificateRequest', responseType: 'IstioCertificateResponse', comment: '' } },
          },
        },
      },
    },
  },
  { longs: Number },
);
const method = (definition['auth.IstioCertificateService'] as Record<string, protoLoader.MethodDefinition<object, object>>).CreateCertificate!;

test('the request encodes as protobufjs reads it', () => {
  const decoded = method.requestDeserialize(encodeCertificateRequest({ csr: 'PEM…', validitySeconds: 86_400 }));
  assert.deepEqual({ ...decoded }, { csr: 'PEM…', validityDuration: 86_400 });
});

test('ISTIO_META_CERT_SIGNER travels as Istio sends it: metadata.fields.CertSigner, a string Value', () => {
  const decoded = method.requestDeserialize(encodeCertificateRequest({ csr: 'PEM', validitySeconds: 60, certSigner: 'istio-system/clusterissuer' })) as {
    metadata?: { fields: Record<string, { stringValue: string }> };
  };
  assert.deepEqual(JSON.parse(JSON.stringify(decoded.metadata)), { fields: { CertSigner: { stringValue: 'istio-system/clusterissuer' } } });
  const plain = method.requestDeserialize(encodeCertificateRequest({ csr: 'PEM', validitySeconds: 60 })) as { metadata?: unknown };
  assert.equal(plain.metadata, undefined, 'no signer, no metadata');
});

test('the response decodes what protobufjs encodes, unknown fields skipped', () => {
  const bytes = method.responseSerialize({ certChain: ['leaf', 'root'], extra: 300, note: 'x' });
  assert.deepEqual(decodeCertificateResponse(bytes), ['leaf', 'root']);
});

test('a truncated response is an error, not a short chain', () => {
  assert.throws(() => decodeCertificateResponse(Buffer.from([0x0a, 0x05, 0x61])), /truncated/);
});
