import assert from 'node:assert/strict';
import { test } from 'node:test';
import { xdsCallMetadata } from './xds-env.ts';

test('gRPC metadata on the xDS call: ClusterID from ISTIO_META_CLUSTER_ID, then XDS_HEADER_*, as Istio\'s agent sends them', () => {
  const rows: [env: Record<string, string>, want: Record<string, string>][] = [
    [{}, { clusterid: '' }],
    [{ ISTIO_META_CLUSTER_ID: 'Kubernetes' }, { clusterid: 'Kubernetes' }],
    [{ ISTIO_META_CLUSTER_ID: 'remote', XDS_HEADER_X_Tenant: 'blue', XDS_HEADER_: 'x', OTHER: 'y' }, { clusterid: 'remote', x_tenant: 'blue' }],
    [{ 'XDS_HEADER_x-mesh.id': 'm1' }, { clusterid: '', 'x-mesh.id': 'm1' }],
    [{ XDS_HEADER_Y: ' ~', CLUSTER_ID: 'ca-only' }, { clusterid: '', y: ' ~' }],
  ];
  for (const [env, want] of rows) assert.deepEqual(xdsCallMetadata(env), want, JSON.stringify(env));
});

test('an XDS_HEADER_* gRPC cannot send is exit 2 naming the variable', () => {
  const rows: [env: Record<string, string>, message: RegExp][] = [
    [{ 'XDS_HEADER_a b': 'x' }, /^env XDS_HEADER_a b: "a b" cannot be a gRPC metadata name/],
    [{ 'XDS_HEADER_grpc-timeout': '1S' }, /^env XDS_HEADER_grpc-timeout: "grpc-timeout"/],
    [{ XDS_HEADER_AUTHORIZATION: 'Bearer x' }, /^env XDS_HEADER_AUTHORIZATION: "authorization"/],
    [{ XDS_HEADER_X: 'caf\u00e9' }, /^env XDS_HEADER_X: the value must be printable ASCII/],
    [{ XDS_HEADER_X: 'a\u007f' }, /^env XDS_HEADER_X: the value must be printable ASCII/],
    [{ XDS_HEADER_X: 'a\u001f' }, /^env XDS_HEADER_X: the value must be printable ASCII/],
    [{ XDS_HEADER_TE: 'trailers' }, /^env XDS_HEADER_TE: "te"/],
  ];
  for (const [env, message] of rows) {
    assert.throws(
      () => xdsCallMetadata(env),
      (error: Error & { exitCode?: number }) => message.test(error.message) && error.exitCode === 2,
      JSON.stringify(env),
    );
  }
});

test('XDS_HEADER_* are taken in name order: the first bad one by name is the one named, whatever order the env lists them in', () => {
  assert.throws(() => xdsCallMetadata({ XDS_HEADER_b: '\u0001', XDS_HEADER_a: '\u0001' }), { message: /^env XDS_HEADER_a: / });
  assert.throws(() => xdsCallMetadata({ XDS_HEADER_a: '\u0001', XDS_HEADER_b: 'x', 'XDS_HEADER_a b': 'x' }), { message: /^env XDS_HEADER_a: / });
});
