import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AgentError } from '../shared/errors.ts';
import { readNodeEnv } from '../settings/pod-env.ts';
import { buildNodeMetadata, metadataFromEnv, type AgentFacts } from './metadata.ts';

const noFacts: AgentFacts = { instanceIps: [], envoyStatusPort: 0, envoyPrometheusPort: 0, exitOnZeroActiveConnections: false, proxyConfig: {} };
const build = (env: Record<string, string>, agent: Partial<AgentFacts> = {}, podInfo = {}) =>
  buildNodeMetadata({ node: readNodeEnv(env), podInfo, agent: { ...noFacts, ...agent } });

test('METADATA_DISCOVERY: PEER_METADATA_DISCOVERY when set (even empty), else true only with ENABLE_HBONE', () => {
  const rows: [Record<string, string>, unknown][] = [
    [{}, 'false'],
    [{ ISTIO_META_ENABLE_HBONE: 'true' }, 'true'],
    [{ ISTIO_META_ENABLE_HBONE: 'false' }, 'false'],
    [{ PEER_METADATA_DISCOVERY: 'T' }, 'true'],
    [{ PEER_METADATA_DISCOVERY: '0', ISTIO_META_ENABLE_HBONE: 'true' }, 'false'],
  ];
  for (const [env, want] of rows) assert.equal(build(env).METADATA_DISCOVERY, want, JSON.stringify(env));
  for (const value of ['yes', '']) {
    assert.throws(
      () => build({ PEER_METADATA_DISCOVERY: value }),
      (error: unknown) => error instanceof AgentError && error.exitCode === 2 && error.message.startsWith('env PEER_METADATA_DISCOVERY: '),
      value,
    );
  }
});

test('what the env and the agent set only when there is something to set', () => {
  const empty = build({ POD_NAME: '', POD_NAMESPACE: '', SERVICE_ACCOUNT: '', DNS_PROXY_ADDR: '' }, { pilotSan: [] });
  for (const key of [
    'NAME',
    'NAMESPACE',
    'SERVICE_ACCOUNT',
    'DNS_PROXY_ADDR',
    'INSTANCE_IPS',
    'ENVOY_STATUS_PORT',
    'ENVOY_PROMETHEUS_PORT',
    'EXIT_ON_ZERO_ACTIVE_CONNECTIONS',
    'PILOT_SAN',
    'ENVOY_SKIP_DEPRECATED_LOGS',
    'WORKLOAD_IDENTITY_SOCKET_FILE',
    'STATIC_LABELS',
    'LABELS',
    'ANNOTATIONS',
  ]) {
    assert.equal(key in empty, false, key);
  }
  const full = build({ DNS_PROXY_ADDR: '127.0.0.1:15053' }, { pilotSan: ['istiod.istio-system.svc'], skipDeprecatedLogs: false, instanceIps: ['198.18.0.2'] });
  assert.deepEqual(
    [full.DNS_PROXY_ADDR, full.PILOT_SAN, full.ENVOY_SKIP_DEPRECATED_LOGS, full.INSTANCE_IPS],
    ['127.0.0.1:15053', ['istiod.istio-system.svc'], 'false', '198.18.0.2'],
  );
});

test('PROXY_CONFIG: the env\'s, else ISTIO_META_PROXY_CONFIG\'s, under the merged ProxyConfig and the agent\'s fields', () => {
  assert.deepEqual(build({ ISTIO_META_PROXY_CONFIG: '{"statNameLength":1,"concurrency":2}' }).PROXY_CONFIG, { statNameLength: 1, concurrency: 2 });
  assert.deepEqual(build({ PROXY_CONFIG: '{"statNameLength":3}', ISTIO_META_PROXY_CONFIG: '{"concurrency":2}' }).PROXY_CONFIG, { statNameLength: 3 });
  const layered = build(
    { PROXY_CONFIG: '{"statNameLength":3,"concurrency":1}' },
    { mergedProxyConfig: { statNameLength: 3, concurrency: 4, statusPort: 1 }, proxyConfig: { statusPort: 15020 } },
  );
  assert.deepEqual(layered.PROXY_CONFIG, { statNameLength: 3, concurrency: 4, statusPort: 15020 });
  assert.deepEqual(build({}).PROXY_CONFIG, {});
});

test('a YAML PROXY_CONFIG (istio-start.sh exports one) reaches the node as the object the settings read from it', () => {
  const yaml = '\nserviceCluster: vm.k2\ncontrolPlaneAuthPolicy: MUTUAL_TLS\n';
  const merged = { serviceCluster: 'vm.k2', controlPlaneAuthPolicy: 'MUTUAL_TLS' };
  assert.deepEqual(build({ PROXY_CONFIG: yaml }, { mergedProxyConfig: merged }).PROXY_CONFIG, merged);
});

test('ProxyConfig proxyMetadata\'s ISTIO_META_* strings are node metadata under the env\'s; its other entries are not', () => {
  const proxyMetadata = { ISTIO_META_MESH_ID: 'from-proxy-config', ISTIO_META_NETWORK: 'n1', DNS_PROXY_ADDR: '127.0.0.1:1', ISTIO_META_NUMBER: 5 };
  const metadata = build({ ISTIO_META_MESH_ID: 'from-env' }, { mergedProxyConfig: { proxyMetadata } });
  assert.deepEqual([metadata.MESH_ID, metadata.NETWORK, metadata.DNS_PROXY_ADDR, metadata.NUMBER], ['from-env', 'n1', undefined, undefined]);
  assert.equal(build({}, { mergedProxyConfig: { proxyMetadata: 'not an object' } }).MESH_ID, undefined);
});

test('a proxyMetadata value that cannot take its type names the ProxyConfig field and its source; the same value from the env names the env var', () => {
  const proxyMetadata = { ISTIO_META_ENVOY_STATUS_PORT: 'status' };
  const source = 'annotation proxy.istio.io/config (/etc/istio/pod/annotations)';
  assert.throws(() => build({}, { mergedProxyConfig: { proxyMetadata }, proxyMetadataSource: source }), {
    message: `${source}: field proxyMetadata.ISTIO_META_ENVOY_STATUS_PORT: must be a port number (an integer 0-65535); istiod reads node metadata ENVOY_STATUS_PORT with that type`,
  });
  assert.throws(() => build({ ISTIO_META_ENVOY_STATUS_PORT: 'x' }, { mergedProxyConfig: { proxyMetadata }, proxyMetadataSource: source }), {
    message: /^env ISTIO_META_ENVOY_STATUS_PORT: must be a port number/,
  });
});

test('ANNOTATIONS: the pod\'s over ISTIO_META_ANNOTATIONS; an ISTIO_METAJSON_ value replaces a META value that is not an object', () => {
  const metadata = build({ ISTIO_META_ANNOTATIONS: '{"a":"1","b":"2"}' }, {}, { annotations: { b: '3' } });
  assert.deepEqual(metadata.ANNOTATIONS, { a: '1', b: '3' });
  assert.deepEqual(build({ ISTIO_META_ANNOTATIONS: '{"a":"1"}' }).ANNOTATIONS, { a: '1' });
  assert.deepEqual(metadataFromEnv({ ISTIO_META_MY: 'text', ISTIO_METAJSON_MY: '{"k":1}' }), { MY: { k: 1 } });
  assert.deepEqual(metadataFromEnv({ ISTIO_META_MY: '{"a":1}', ISTIO_METAJSON_MY: '{"k":1}' }), { MY: { k: 1 } }, 'a META value is text, not an object');
});
