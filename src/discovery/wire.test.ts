import assert from 'node:assert/strict';
import { describe } from 'node:test';
import { it } from '../../test/support/sync-deadline.ts';
import { encodeVarint } from '../grpc/proto-wire.ts';
import { encodeAck, encodeSubscribe, readRequest, readResponse, responseReader, withNode } from './wire.ts';
import { WireError } from '../grpc/field-scanner.ts';

/** Encodes one length-delimited field, the way protoc would. */
const len = (field: number, value: Buffer | string) => {
  const bytes = Buffer.from(value);
  return Buffer.concat([encodeVarint(field * 8 + 2), encodeVarint(bytes.length), bytes]);
};
const varint = (field: number, value: number) => Buffer.concat([encodeVarint(field * 8), encodeVarint(value)]);
const cluster = 'type.googleapis.com/envoy.config.cluster.v3.Cluster';

describe('readRequest', () => {
  it('reads an SotW ACK with node and names', () => {
    const node = Buffer.concat([len(1, 'sidecar~1.2.3.4~a~b'), len(2, 'cluster')]);
    const request = Buffer.concat([len(1, 'v7'), len(2, node), len(3, 'a'), len(3, 'b'), len(4, cluster), len(5, 'n3')]);
    const fields = readRequest(request, 'sotw');
    assert.deepEqual({ ...fields, node: fields.node?.toString('hex') }, {
      typeUrl: cluster, versionInfo: 'v7', nonce: 'n3', error: undefined, names: ['a', 'b'], unsubscribe: [], node: node.toString('hex'), initialVersions: 0,
    });
  });

  it('reads a Delta NACK: error_detail.message at field 7', () => {
    const status = Buffer.concat([varint(1, 3), len(2, 'bad cluster: no endpoints')]);
    const request = Buffer.concat([len(2, cluster), len(3, 'x'), len(6, 'n9'), len(7, status)]);
    const fields = readRequest(request, 'delta');
    assert.equal(fields.error, 'bad cluster: no endpoints');
    assert.equal(fields.nonce, 'n9');
    assert.deepEqual(fields.names, ['x']);
    assert.equal(fields.node, undefined);
  });

  it('counts a Delta request\'s initial_resource_versions (field 5): what Envoy already holds', () => {
    const entry = (name: string) => len(5, Buffer.concat([len(1, name), len(2, 'v1')]));
    assert.equal(readRequest(Buffer.concat([len(2, cluster), entry('a'), entry('b')]), 'delta').initialVersions, 2);
    assert.equal(readRequest(Buffer.concat([len(4, cluster), len(5, 'n1')]), 'sotw').initialVersions, 0);
  });

  it('marks an error_detail without message as a NACK', () => {
    assert.equal(readRequest(Buffer.concat([len(4, cluster), len(6, '')]), 'sotw').error, '');
  });

  it('skips unknown fields of every wire type', () => {
    const fixed64 = Buffer.concat([encodeVarint(20 * 8 + 1), Buffer.alloc(8)]);
    const fixed32 = Buffer.concat([encodeVarint(21 * 8 + 5), Buffer.alloc(4)]);
    const request = Buffer.concat([varint(19, 5), fixed64, fixed32, len(4, cluster)]);
    assert.equal(readRequest(request, 'sotw').typeUrl, cluster);
  });

  it('throws WireError on garbage', () => {
    assert.throws(() => readRequest(Buffer.from('\x0a\x10short'), 'sotw'), WireError);
    assert.throws(() => readRequest(Buffer.from([0x0b]), 'sotw'), WireError);
    assert.throws(() => readRequest(Buffer.from([0x00, 0x01]), 'sotw'), WireError);
    assert.throws(() => readRequest(varint(4, 1), 'sotw'), /expected length-delimited/);
  });
});

describe('readResponse', () => {
  it('counts resources and removed names without decoding them', () => {
    const resource = len(2, Buffer.alloc(1000, 7));
    const body = Buffer.concat([len(1, 'v1'), resource, resource, len(4, cluster), len(5, 'n1'), len(6, 'gone')]);
    assert.deepEqual(readResponse(body, 'delta'), { typeUrl: cluster, version: 'v1', nonce: 'n1', resources: 2, removed: 1 });
    assert.equal(readResponse(body, 'sotw').removed, 0);
  });

  it('reads the same fields whatever the chunk boundaries', () => {
    const resource = len(2, Buffer.alloc(300, 7));
    const body = Buffer.concat([len(1, 'v1'), resource, resource, resource, len(4, cluster), len(5, 'n1')]);
    for (const size of [1, 2, 3, 7, 64, 299, 300, 301, body.length]) {
      const { scanner, fields } = responseReader(body.length, 'sotw');
      for (let pos = 0; pos < body.length; pos += size) scanner.push(body.subarray(pos, pos + size));
      scanner.finish();
      assert.deepEqual(fields, { typeUrl: cluster, version: 'v1', nonce: 'n1', resources: 3, removed: 0 }, `chunks of ${size}`);
    }
  });
});

describe('withNode', () => {
  it('appends a node the reader then finds, in either mode', () => {
    const node = len(1, 'node-id');
    for (const mode of ['sotw', 'delta'] as const) {
      const typeField = mode === 'sotw' ? 4 : 2;
      const fields = readRequest(withNode(len(typeField, cluster), node, mode), mode);
      assert.equal(fields.typeUrl, cluster);
      assert.deepEqual(fields.node, node);
    }
  });
});

describe('encodeAck and encodeSubscribe: the agent\'s own requests', () => {
  it('SotW: version, names, type and nonce; a NACK adds error_detail with INTERNAL and the message', () => {
    const ack = encodeAck('sotw', { typeUrl: cluster, version: 'v3', nonce: 'n3', names: ['a', 'b'] });
    assert.deepEqual(ack, Buffer.concat([len(1, 'v3'), len(3, 'a'), len(3, 'b'), len(4, cluster), len(5, 'n3')]));
    const nack = encodeAck('sotw', { typeUrl: cluster, version: 'v2', nonce: 'n3' }, 'bad wasm');
    assert.deepEqual(nack, Buffer.concat([len(1, 'v2'), len(4, cluster), len(5, 'n3'), len(6, Buffer.concat([varint(1, 13), len(2, 'bad wasm')]))]));
    assert.deepEqual(readRequest(nack, 'sotw'), {
      typeUrl: cluster,
      versionInfo: 'v2',
      nonce: 'n3',
      error: 'bad wasm',
      names: [],
      unsubscribe: [],
      node: undefined,
      initialVersions: 0,
    });
  });

  it('Delta: type and nonce only (no version field, names never repeated); the NACK at field 7', () => {
    assert.deepEqual(encodeAck('delta', { typeUrl: cluster, version: 'v3', nonce: 'n3', names: ['a'] }), Buffer.concat([len(2, cluster), len(6, 'n3')]));
    const nack = encodeAck('delta', { typeUrl: cluster, version: 'v3', nonce: 'n3' }, '');
    assert.deepEqual(nack, Buffer.concat([len(2, cluster), len(6, 'n3'), len(7, Buffer.concat([varint(1, 13), len(2, '')]))]));
    assert.equal(readRequest(nack, 'delta').error, '', 'an empty message is still a NACK');
  });

  it('a subscription is the type alone, at the mode\'s field', () => {
    assert.deepEqual(encodeSubscribe('sotw', cluster), len(4, cluster));
    assert.deepEqual(encodeSubscribe('delta', cluster), len(2, cluster));
  });

  it('field number 0 is not protobuf; a Delta request\'s node is its field 1', () => {
    assert.throws(() => readRequest(Buffer.from([0x02, 0x00]), 'delta'), WireError);
    assert.equal(readRequest(Buffer.concat([len(2, cluster), len(1, Buffer.from([0x0a, 0x00]))]), 'delta').node?.length, 2);
  });
});

describe('readRequest and readResponse defaults and error_detail fields', () => {
  it('an empty message reads as empty fields', () => {
    assert.deepEqual(readRequest(Buffer.alloc(0), 'sotw'), {
      typeUrl: '',
      versionInfo: '',
      nonce: '',
      error: undefined,
      names: [],
      unsubscribe: [],
      node: undefined,
      initialVersions: 0,
    });
    assert.deepEqual(readResponse(Buffer.alloc(0), 'delta'), { typeUrl: '', version: '', nonce: '', resources: 0, removed: 0 });
  });

  it('error_detail: only google.rpc.Status.message (field 2, length-delimited) is the error; its details and a varint 2 are not', () => {
    const status = Buffer.concat([varint(1, 13), varint(2, 7), len(3, 'details'), len(2, 'the message')]);
    assert.equal(readRequest(Buffer.concat([len(4, cluster), len(6, status)]), 'sotw').error, 'the message');
    assert.equal(readRequest(Buffer.concat([len(4, cluster), len(6, Buffer.concat([len(3, 'details')]))]), 'sotw').error, '');
  });
});
