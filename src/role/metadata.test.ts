import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildNodeMetadata, matchedIstioVersion, metadataFromEnv, type AgentFacts } from './metadata.ts';
import { readNodeEnv } from '../settings/pod-env.ts';

test('ISTIO_META_ values take the type istiod declares; unknown keys stay strings', () => {
  const cases: [Record<string, string>, Record<string, unknown>][] = [
    [{ ISTIO_META_ENVOY_STATUS_PORT: '15021' }, { ENVOY_STATUS_PORT: 15021 }],
    [{ ISTIO_META_ENVOY_PROMETHEUS_PORT: '15090' }, { ENVOY_PROMETHEUS_PORT: 15090 }],
    [{ ISTIO_META_DNS_CAPTURE: 'True' }, { DNS_CAPTURE: 'true' }],
    [{ ISTIO_META_ENABLE_HBONE: '0' }, { ENABLE_HBONE: 'false' }],
    [{ ISTIO_META_LABELS: '{"app":"reviews"}' }, { LABELS: { app: 'reviews' } }],
    [{ ISTIO_META_PROXY_CONFIG: '{"statusPort":15020,"drainDuration":"45s"}' }, { PROXY_CONFIG: { statusPort: 15020, drainDuration: '45s' } }],
    [{ ISTIO_META_INSTANCE_IPS: '10.0.0.1,fd00::1' }, { INSTANCE_IPS: '10.0.0.1,fd00::1' }],
    [{ ISTIO_META_REQUESTED_NETWORK_VIEW: 'n1,n2' }, { REQUESTED_NETWORK_VIEW: 'n1,n2' }],
    [
      { ISTIO_META_POD_PORTS: '[{"name":"http","containerPort":9080,"protocol":"TCP"}]' },
      { POD_PORTS: '[{"name":"http","containerPort":9080,"protocol":"TCP"}]' },
    ],
    [{ ISTIO_META_PILOT_SAN: 'istiod.istio-system.svc,istiod' }, { PILOT_SAN: ['istiod.istio-system.svc', 'istiod'] }],
    [
      { ISTIO_META_CLUSTER_ID: 'Kubernetes', ISTIO_META_MESH_ID: 'cluster.local' },
      { CLUSTER_ID: 'Kubernetes', MESH_ID: 'cluster.local' },
    ],
    [
      { ISTIO_META_MY_FLAG: '15021', ISTIO_META_OTHER: 'true' },
      { MY_FLAG: '15021', OTHER: 'true' },
    ],
    [{ ISTIO_META_: 'no name', PATH: '/bin' }, {}],
  ];
  for (const [env, expected] of cases) assert.deepEqual(metadataFromEnv(env), expected, JSON.stringify(env));
});

test('ISTIO_METAJSON_ values are typed too, and merge over a same-named ISTIO_META_ object', () => {
  const cases: [Record<string, string>, Record<string, unknown>][] = [
    [
      { ISTIO_METAJSON_LABELS: '{"app":"productpage","version":"v1"}', ISTIO_META_LABELS: '{"app":"old","tier":"web"}' },
      { LABELS: { app: 'productpage', version: 'v1', tier: 'web' } },
    ],
    [{ ISTIO_METAJSON_ENVOY_STATUS_PORT: '15021' }, { ENVOY_STATUS_PORT: 15021 }],
    [{ ISTIO_METAJSON_DNS_CAPTURE: 'true' }, { DNS_CAPTURE: 'true' }],
    [{ ISTIO_METAJSON_INSTANCE_IPS: '["10.0.0.1","10.0.0.2"]' }, { INSTANCE_IPS: '10.0.0.1,10.0.0.2' }],
    [{ ISTIO_METAJSON_PORTS: '[9080]' }, { PORTS: [9080] }],
  ];
  for (const [env, expected] of cases) assert.deepEqual(metadataFromEnv(env), expected, JSON.stringify(env));
});

test('a value that cannot take its type is a BAD_ENV naming the variable', () => {
  const cases: [Record<string, string>, RegExp][] = [
    [{ ISTIO_META_ENVOY_STATUS_PORT: 'abc' }, /^env ISTIO_META_ENVOY_STATUS_PORT: must be a port number/],
    [{ ISTIO_META_ENVOY_PROMETHEUS_PORT: '70000' }, /^env ISTIO_META_ENVOY_PROMETHEUS_PORT: must be a port/],
    [{ ISTIO_META_DNS_CAPTURE: 'yes' }, /^env ISTIO_META_DNS_CAPTURE: "yes" is not a boolean/],
    [{ ISTIO_META_LABELS: 'app=reviews' }, /^env ISTIO_META_LABELS: is not valid JSON/],
    [{ ISTIO_METAJSON_LABELS: '{"replicas":3}' }, /^env ISTIO_METAJSON_LABELS: must be a JSON object of strings \("replicas" is not a string\)/],
    [{ ISTIO_METAJSON_NAMESPACE: '5' }, /^env ISTIO_METAJSON_NAMESPACE: must be a string; istiod reads node metadata NAMESPACE/],
    [{ ISTIO_META_POD_PORTS: '[{"containerPort":"http"}]' }, /^env ISTIO_META_POD_PORTS: must be a JSON array/],
    [{ ISTIO_META_PROXY_CONFIG: '{"drainDuration":45}' }, /^env ISTIO_META_PROXY_CONFIG: field drainDuration must be a duration/],
    [{ PROXY_CONFIG: '{"statusPort":"x"}' }, /^env PROXY_CONFIG: field statusPort must be an integer/],
    [{ PROXY_CONFIG: '{"holdApplicationUntilProxyStarts":"true"}' }, /^env PROXY_CONFIG: field holdApplicationUntilProxyStarts must be true or false/],
    [{ PROXY_CONFIG: '[]' }, /^env PROXY_CONFIG: must be a JSON object/],
    [{ ISTIO_METAJSON_LABELS: '{app' }, /^env ISTIO_METAJSON_LABELS: is not valid JSON/],
    [{ ISTIO_METAJSON_X: `${'['.repeat(5000)}${']'.repeat(5000)}` }, /^env ISTIO_METAJSON_X: nests deeper than 64 levels$/],
    [{ ISTIO_METAJSON_X: `"${'a'.repeat(300 * 1024)}"` }, /^env ISTIO_METAJSON_X: is larger than 262144 bytes$/],
  ];
  for (const [env, message] of cases) {
    assert.throws(() => buildNodeMetadata({ node: readNodeEnv(env), podInfo: {}, agent: noFacts }), (error: Error & { exitCode?: number }) => {
      assert.match(error.message, message);
      assert.equal(error.exitCode, 2);
      return true;
    }, JSON.stringify(env).slice(0, 80));
  }
});

const noFacts: AgentFacts = { instanceIps: [], envoyStatusPort: 0, envoyPrometheusPort: 0, exitOnZeroActiveConnections: false, proxyConfig: {} };
const facts: AgentFacts = {
  instanceIps: ['127.0.0.2', '192.0.2.2', '127.0.0.2', 'fd00::2'],
  envoyStatusPort: 15021,
  envoyPrometheusPort: 15090,
  exitOnZeroActiveConnections: false,
  proxyConfig: { statusPort: 15020, drainDuration: '45s' },
  skipDeprecatedLogs: true,
  workloadIdentitySocketFile: 'socket',
};

test('the agent adds what Istio\'s agent adds: the node of istiod/reviews-sidecar.json', () => {
  const env = {
    POD_NAME: 'reviews-v1-abc', POD_NAMESPACE: 'default', SERVICE_ACCOUNT: 'reviews',
    ISTIO_METAJSON_LABELS: '{"app":"reviews","version":"v1"}', ISTIO_META_INTERCEPTION_MODE: 'NONE',
    PROXY_CONFIG: '{"discoveryAddress":"127.0.0.1:15010","statusPort":1,"statNameLength":189}',
  };
  assert.deepEqual(buildNodeMetadata({ node: readNodeEnv(env), podInfo: {}, agent: facts }), {
    NAME: 'reviews-v1-abc',
    NAMESPACE: 'default',
    SERVICE_ACCOUNT: 'reviews',
    INTERCEPTION_MODE: 'NONE',
    LABELS: { app: 'reviews', version: 'v1' },
    STATIC_LABELS: { app: 'reviews', version: 'v1' },
    INSTANCE_IPS: '127.0.0.2,192.0.2.2,fd00::2',
    ENVOY_STATUS_PORT: 15021,
    ENVOY_PROMETHEUS_PORT: 15090,
    ISTIO_VERSION: matchedIstioVersion,
    METADATA_DISCOVERY: 'false',
    ENVOY_SKIP_DEPRECATED_LOGS: 'true',
    WORKLOAD_IDENTITY_SOCKET_FILE: 'socket',
    PROXY_CONFIG: { discoveryAddress: '127.0.0.1:15010', statusPort: 15020, statNameLength: 189, drainDuration: '45s' },
  });
});

test('the mTLS metrics ports go into the node, as Istio\'s agent sends them (istiod leaves them uncaptured); 0 leaves them out', () => {
  const withPorts = buildNodeMetadata({ node: readNodeEnv({}), podInfo: {}, agent: { ...facts, envoySecureMetricsPort: 15091, envoySecureMergedMetricsPort: 15092 } });
  assert.deepEqual([withPorts.ENVOY_SECURE_METRICS_PORT, withPorts.ENVOY_SECURE_MERGED_METRICS_PORT], [15091, 15092]);
  const without = buildNodeMetadata({ node: readNodeEnv({}), podInfo: {}, agent: { ...facts, envoySecureMetricsPort: 0 } });
  assert.deepEqual([without.ENVOY_SECURE_METRICS_PORT, without.ENVOY_SECURE_MERGED_METRICS_PORT], [undefined, undefined]);
});

test('LABELS: pod labels from the downward API win over static labels, without pod-template-hash', () => {
  const env = { ISTIO_METAJSON_LABELS: '{"app":"reviews","tier":"web"}', POD_NAMESPACE: 'ns' };
  const podInfo = { labels: { app: 'reviews-v2', 'pod-template-hash': '54b8' }, annotations: { 'sidecar.istio.io/status': '{}' } };
  const metadata = buildNodeMetadata({ node: readNodeEnv(env), podInfo, agent: noFacts });
  assert.deepEqual(metadata.LABELS, { app: 'reviews-v2', tier: 'web' });
  assert.deepEqual(metadata.STATIC_LABELS, { app: 'reviews', tier: 'web' });
  assert.deepEqual(metadata.ANNOTATIONS, { 'sidecar.istio.io/status': '{}' });
  assert.deepEqual(buildNodeMetadata({ node: readNodeEnv({}), podInfo: { labels: { app: 'a' } }, agent: noFacts }).LABELS, { app: 'a' });
});

test('agent facts win over env; env fills what the agent leaves out; ISTIO_VERSION may be overridden', () => {
  const env = { ISTIO_META_ENVOY_STATUS_PORT: '1', ISTIO_META_ENVOY_PROMETHEUS_PORT: '2', ISTIO_META_ISTIO_VERSION: '1.30.2', ISTIO_META_NAMESPACE: 'meta-ns' };
  const metadata = buildNodeMetadata({ node: readNodeEnv(env), podInfo: {}, agent: { ...facts, envoyPrometheusPort: 0, exitOnZeroActiveConnections: true } });
  assert.equal(metadata.ENVOY_STATUS_PORT, 15021);
  assert.equal(metadata.ENVOY_PROMETHEUS_PORT, 2);
  assert.equal(metadata.ISTIO_VERSION, '1.30.2');
  assert.equal(metadata.NAMESPACE, 'meta-ns');
  assert.equal(metadata.EXIT_ON_ZERO_ACTIVE_CONNECTIONS, 'true');
});
