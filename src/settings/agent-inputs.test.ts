import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Command } from 'commander';
import { proxyFlags, toOption } from '../cli/proxy-flags.ts';
import { AgentError } from '../shared/errors.ts';
import { readAgentEnv, readAgentInputs } from './agent-inputs.ts';

const pod = { INSTANCE_IP: '198.18.0.7', POD_NAME: 'reviews-v1', POD_NAMESPACE: 'shop', SERVICE_ACCOUNT: 'reviews', HOST_IP: '198.18.0.1' };

test('readAgentEnv: the pod\'s variables as set, for role, node metadata, probes and the bootstrap override', () => {
  const env = readAgentEnv({
    ...pod,
    ISTIO_KUBE_APP_PROBERS: '{}',
    ISTIO_PROMETHEUS_ANNOTATIONS: '{"scrape":"true"}',
    ISTIO_META_MESH_ID: 'm',
    ISTIO_METAJSON_LABELS: '{"a":"b"}',
    ISTIO_META_: 'x',
    DNS_PROXY_ADDR: '127.0.0.1:15053',
    PEER_METADATA_DISCOVERY: '',
    PROXY_CONFIG: '{}',
    OTHER: 'y',
  });
  assert.deepEqual(env.pod, { ip: '198.18.0.7', name: 'reviews-v1', namespace: 'shop' });
  assert.deepEqual(env.node, {
    meta: { ISTIO_META_MESH_ID: 'm', ISTIO_METAJSON_LABELS: '{"a":"b"}' },
    namespace: 'shop',
    name: 'reviews-v1',
    serviceAccount: 'reviews',
    dnsProxyAddr: '127.0.0.1:15053',
    peerMetadataDiscovery: '',
    proxyConfig: '{}',
  });
  assert.deepEqual(env.app, { probers: '{}', prometheusAnnotations: '{"scrape":"true"}' });
  assert.deepEqual([env.hostIp, env.namespace], ['198.18.0.1', 'shop']);
});

test('readAgentEnv: unset is undefined (namespace ""), and the env-only tables take their defaults', () => {
  const env = readAgentEnv({});
  assert.deepEqual(env.pod, { ip: undefined, name: undefined, namespace: undefined });
  assert.deepEqual([env.hostIp, env.namespace, env.app.probers, env.xdsMetadata], [undefined, '', undefined, { clusterid: '' }]);
  assert.deepEqual([env.status.http2Probing, env.proxyless.disableEnvoy, env.dns.capture, env.wasm.enabled], [true, false, false, true]);
});

test('readAgentEnv: DNS settings from ProxyConfig proxyMetadata under the real env; xDS metadata from ISTIO_META_CLUSTER_ID and XDS_HEADER_*', () => {
  assert.equal(readAgentEnv({}, { ISTIO_META_DNS_CAPTURE: 't' }).dns.capture, true);
  assert.equal(readAgentEnv({ ISTIO_META_DNS_CAPTURE: 'false' }, { ISTIO_META_DNS_CAPTURE: 'true' }).dns.capture, false);
  assert.deepEqual(readAgentEnv({ ISTIO_META_CLUSTER_ID: 'c1', CLUSTER_ID: 'c2', XDS_HEADER_X: 'v' }).xdsMetadata, { clusterid: 'c1', x: 'v' });
});

test('readAgentEnv: the bootstrap\'s env (dual stack, local-only metrics, core dumps), proxyMetadata under the env as Istio reads it', () => {
  const none = { secureMetricsPort: 0, secureMergedMetricsPort: 0 };
  assert.deepEqual(readAgentEnv({}).bootstrap, { dualStack: false, metricsLocalhostOnly: false, enableCoreDump: false, ...none });
  const set = readAgentEnv({ ISTIO_DUAL_STACK: 'true', ISTIO_ENVOY_ENABLE_CORE_DUMP: '1', ENVOY_SECURE_METRICS_PORT: '15091' }, { METRICS_LOCALHOST_ACCESS_ONLY: 'true' });
  assert.deepEqual(set.bootstrap, { dualStack: true, metricsLocalhostOnly: true, enableCoreDump: true, ...none, secureMetricsPort: 15091 });
  assert.equal(readAgentEnv({ METRICS_LOCALHOST_ACCESS_ONLY: 'false' }, { METRICS_LOCALHOST_ACCESS_ONLY: 'true' }).bootstrap.metricsLocalhostOnly, false);
});

test('readAgentEnv: a bad DNS value from proxyMetadata names the ProxyConfig field and its source, not an env var the pod does not set', () => {
  assert.throws(() => readAgentEnv({}, { ISTIO_META_DNS_CAPTURE: 'yes' }, 'env PROXY_CONFIG'), {
    message: 'env PROXY_CONFIG: field proxyMetadata.ISTIO_META_DNS_CAPTURE: "yes" is not a boolean (true or false)',
  });
  assert.throws(() => readAgentEnv({ DNS_PROXY_ADDR: 'nope' }, { DNS_PROXY_ADDR: '127.0.0.1:15053' }, 'env PROXY_CONFIG'), { message: /^env DNS_PROXY_ADDR: / });
});

test("readAgentEnv: a bad proxyMetadata value's source is ProxyConfig unless the caller names the file or variable", () => {
  assert.throws(() => readAgentEnv({}, { ISTIO_META_DNS_CAPTURE: 'yes' }), {
    message: 'ProxyConfig: field proxyMetadata.ISTIO_META_DNS_CAPTURE: "yes" is not a boolean (true or false)',
  });
});

test('readAgentEnv: a bad value of any table is exit 2 naming the variable', () => {
  const cases: [Record<string, string>, string][] = [
    [{ PILOT_AGENT_MERGE_ENVOY_STATS: 'yes' }, 'env PILOT_AGENT_MERGE_ENVOY_STATS: "yes" is not a boolean (true or false)'],
    [{ DISABLE_ENVOY: 'on' }, 'env DISABLE_ENVOY: "on" is not a boolean (true or false)'],
    [{ ISTIO_DUAL_STACK: 'yes' }, 'env ISTIO_DUAL_STACK: "yes" is not a boolean (true or false)'],
    [{ ENVOY_SECURE_MERGED_METRICS_PORT: '70000' }, 'env ENVOY_SECURE_MERGED_METRICS_PORT: not a port (0-65535)'],
    [{ DNS_PROXY_ADDR: 'nope' }, 'env DNS_PROXY_ADDR: '],
    [{ WASM_HTTP_REQUEST_MAX_RETRIES: '0' }, 'env WASM_HTTP_REQUEST_MAX_RETRIES: must be at least 1'],
    [{ 'XDS_HEADER_a b': 'x' }, 'env XDS_HEADER_a b: '],
  ];
  for (const [env, message] of cases) {
    assert.throws(
      () => readAgentEnv(env),
      (error: unknown) => error instanceof AgentError && error.exitCode === 2 && error.message.startsWith(message),
      message,
    );
  }
});

/** The proxy command's flags from argv and the process env, as commander reads them. */
async function inputsOf(args: string[], env: Record<string, string>) {
  const command = new Command('proxy').exitOverride().configureOutput({ writeErr: () => undefined });
  for (const spec of proxyFlags) command.addOption(toOption(spec));
  const saved = process.env;
  process.env = { ...env };
  try {
    command.parse(args, { from: 'user' });
    const commandLine = { values: command.opts(), sourceOf: (name: string) => command.getOptionValueSource(name) };
    return await readAgentInputs({ proxyType: 'sidecar', commandLine, env: process.env, meshConfigPath: '/nonexistent/mesh', podInfoDir: '/nonexistent/pod' });
  } finally {
    process.env = saved;
  }
}

test('readAgentInputs: flags over env over PROXY_CONFIG over defaults, and the typed env beside the config', async () => {
  const proxyConfig = JSON.stringify({
    terminationDrainDuration: '7s',
    drainDuration: '9s',
    binaryPath: '/from/proxy-config',
    proxyMetadata: { ISTIO_META_DNS_CAPTURE: 'T' },
  });
  const inputs = await inputsOf(['--drainDuration', '3s'], { ...pod, PROXY_CONFIG: proxyConfig, TERMINATION_DRAIN_DURATION_SECONDS: '11' });
  assert.deepEqual(
    [inputs.config.drainDurationMs, inputs.config.terminationDrainDurationMs, inputs.config.binaryPath, inputs.config.parentShutdownDurationMs],
    [3000, 11_000, '/from/proxy-config', 60_000],
  );
  assert.deepEqual(inputs.applied, ['binaryPath']);
  assert.equal(inputs.proxyConfig.origin.binaryPath, 'env PROXY_CONFIG');
  assert.deepEqual([inputs.env.pod.ip, inputs.env.dns.capture], ['198.18.0.7', true]);
});

test("readAgentEnv: the platform's env (CLOUD_PLATFORM lower-cased, GCP's zone and metadata host) and PROV_CERT, as set", () => {
  const set = readAgentEnv({ CLOUD_PLATFORM: 'GCP', GCP_ZONE: 'us-east1-c', GCE_METADATA_HOST: 'metadata.test:8080', PROV_CERT: '/etc/certs' });
  assert.deepEqual(set.platform, { cloudPlatform: 'gcp', gcpZone: 'us-east1-c', gceMetadataHost: 'metadata.test:8080' });
  assert.equal(set.provCert, '/etc/certs');
  const unset = readAgentEnv({});
  assert.deepEqual([unset.platform, unset.provCert], [{ cloudPlatform: undefined, gcpZone: undefined, gceMetadataHost: undefined }, undefined]);
});
