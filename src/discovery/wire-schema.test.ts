import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { loadSync, type MethodDefinition } from '@grpc/proto-loader';
import { sotwRequest } from '../../test/support/ads-client.ts';
import { lenField } from '../grpc/proto-wire.ts';
import { readRequest, readResponse, withNode, type XdsMode } from './wire.ts';

/**
 * wire.ts and the tests' hand encoders share field numbers, so a wrong number
 * could pass both: here the other side is Envoy's own discovery.proto (the
 * copy @grpc/grpc-js-xds ships), encoded and decoded by @grpc/proto-loader.
 */
const deps = fileURLToPath(new URL('../../node_modules/@grpc/grpc-js-xds/deps/', import.meta.url));
const definitions = loadSync('envoy/service/discovery/v3/ads.proto', {
  includeDirs: ['envoy-api', 'xds', 'googleapis', 'protoc-gen-validate'].map((dir) => deps + dir),
  keepCase: true,
  defaults: false,
  oneofs: true,
});
const ads = definitions['envoy.service.discovery.v3.AggregatedDiscoveryService'] as Record<string, MethodDefinition<object, object>>;
const methods: Record<XdsMode, MethodDefinition<object, object>> = { sotw: ads.StreamAggregatedResources!, delta: ads.DeltaAggregatedResources! };
type Message = Record<string, unknown>;
const encodeRequest = (mode: XdsMode, message: Message) => methods[mode].requestSerialize(message);
const decodeRequest = (mode: XdsMode, bytes: Buffer) => methods[mode].requestDeserialize(bytes) as Message;
const encodeResponse = (mode: XdsMode, message: Message) => methods[mode].responseSerialize(message);
const cluster = 'type.googleapis.com/envoy.config.cluster.v3.Cluster';
const nodeField = { sotw: 2, delta: 1 };
/** The Node bytes the reader returned, decoded through a request that carries only them. */
const nodeId = (mode: XdsMode, node: Buffer | undefined) =>
  (decodeRequest(mode, lenField(nodeField[mode], node ?? Buffer.alloc(0))).node as Message | undefined)?.id;

describe('wire.ts against discovery.proto (proto-loader)', () => {
  it('reads every field of an SotW DiscoveryRequest protobufjs encoded', () => {
    const bytes = encodeRequest('sotw', {
      version_info: 'v7',
      node: { id: 'sidecar~1.2.3.4~a~b', cluster: 'c' },
      resource_names: ['a', 'b'],
      type_url: cluster,
      response_nonce: 'n3',
      error_detail: { code: 3, message: 'bad cluster' },
    });
    const fields = readRequest(bytes, 'sotw');
    assert.deepEqual(
      { ...fields, node: nodeId('sotw', fields.node) },
      { typeUrl: cluster, versionInfo: 'v7', nonce: 'n3', error: 'bad cluster', names: ['a', 'b'], unsubscribe: [], node: 'sidecar~1.2.3.4~a~b', initialVersions: 0 },
    );
  });

  it('reads every field of a DeltaDiscoveryRequest protobufjs encoded', () => {
    const bytes = encodeRequest('delta', {
      node: { id: 'router~5.6.7.8~r~d' }, type_url: cluster, resource_names_subscribe: ['x', 'y'], resource_names_unsubscribe: ['gone'],
      initial_resource_versions: { a: 'v1', b: 'v2', c: 'v3' }, response_nonce: 'n9', error_detail: { code: 13, message: 'no endpoints' },
    });
    const fields = readRequest(bytes, 'delta');
    assert.deepEqual(
      { ...fields, node: nodeId('delta', fields.node) },
      { typeUrl: cluster, versionInfo: '', nonce: 'n9', error: 'no endpoints', names: ['x', 'y'], unsubscribe: ['gone'], node: 'router~5.6.7.8~r~d', initialVersions: 3 },
    );
  });

  it('reads a DiscoveryResponse and a DeltaDiscoveryResponse protobufjs encoded', () => {
    const any = { type_url: cluster, value: Buffer.alloc(40, 7) };
    const sotw = encodeResponse('sotw', { version_info: 'v1', resources: [any, any, any], type_url: cluster, nonce: 'n1', canary: true });
    assert.deepEqual(readResponse(sotw, 'sotw'), { typeUrl: cluster, version: 'v1', nonce: 'n1', resources: 3, removed: 0 });
    const resource = { name: 'c1', version: 'r1', resource: any };
    const delta = encodeResponse('delta', {
      system_version_info: 'v2',
      resources: [resource, resource],
      type_url: cluster,
      removed_resources: ['c2', 'c3', 'c4'],
      nonce: 'n2',
    });
    assert.deepEqual(readResponse(delta, 'delta'), { typeUrl: cluster, version: 'v2', nonce: 'n2', resources: 2, removed: 3 });
  });

  it('adds a node protobufjs decodes as the node, in either mode', () => {
    for (const mode of ['sotw', 'delta'] as const) {
      const node = encodeRequest(mode, { node: { id: `id-${mode}` } }).subarray(2); // the Node message alone: one tag byte, one length byte
      const request = withNode(encodeRequest(mode, { type_url: cluster, response_nonce: 'n' }), node, mode);
      assert.deepEqual(decodeRequest(mode, request), { type_url: cluster, response_nonce: 'n', node: { id: `id-${mode}` } }, mode);
    }
  });

  it("the tests' own SotW encoder (test/support/ads-client.ts) writes what discovery.proto reads", () => {
    const bytes = sotwRequest({ typeUrl: cluster, nodeId: 'n1', version: 'v3', nonce: 'x', names: ['a'], error: 'rejected' });
    assert.deepEqual(decodeRequest('sotw', bytes), {
      version_info: 'v3',
      node: { id: 'n1' },
      resource_names: ['a'],
      type_url: cluster,
      response_nonce: 'x',
      error_detail: { code: 3, message: 'rejected' },
    });
  });
});
