import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { execa } from 'execa';
import { agentBin, envoyBin, nodeBin } from '../support/paths.ts';
import { writeTestCerts } from '../support/certs.ts';

/** Every rendered variant must pass the real Envoy's own validation. */
describe('rendered bootstraps pass envoy --mode validate', () => {
  let dir: string;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'pilot-agent-variants-'));
    await writeTestCerts(join(dir, 'certs'), 'istio-pilot');
    await writeFile(join(dir, 'template.json'), JSON.stringify({
      node: { id: '{{ node_id }}', cluster: '{{ cluster }}' },
      admin: { address: { socket_address: { address: '127.0.0.1', port_value: '{{ admin_port }}' } } },
    }));
  });

  after(() => rm(dir, { recursive: true, force: true }));

  const common = ['--serviceregistry', 'Other', '--ip', '198.19.1.3', '--discoveryAddress', '127.0.0.1:15010', '--print-bootstrap'];
  const variants: { name: string; args: string[]; env?: Record<string, string>; check: (bootstrap: any) => void }[] = [
    { name: 'sidecar, SotW', args: ['sidecar', '--deltaXds=false'], check: (b) => assert.equal(b.dynamic_resources.ads_config.api_type, 'GRPC') },
    {
      name: 'router, Delta (the default); no cluster_manager without self discovery',
      args: ['router'],
      check: (b) => {
        assert.equal(b.dynamic_resources.ads_config.api_type, 'DELTA_GRPC');
        assert.equal(b.cluster_manager, undefined);
        assert.ok(!b.static_resources.clusters.some((c: any) => c.name === 'local_cluster'));
      },
    },
    {
      name: "sidecar: Istio's internal listener extension and its last stats prefixes",
      args: ['sidecar'],
      check: (b) => {
        assert.deepEqual(
          b.bootstrap_extensions.map((extension: { name: string }) => extension.name),
          ['envoy.bootstrap.internal_listener'],
        );
        assert.deepEqual(b.stats_config.stats_matcher.inclusion_list.patterns.slice(-2), [{ prefix: 'component' }, { prefix: 'istio' }]);
      },
    },
    {
      name: "ingress; xDS goes through the agent's socket",
      args: ['ingress', '--discoveryAddress', 'istio-pilot.istio-system:15010'],
      check: (b) => assert.match(b.static_resources.clusters[0].load_assignment.endpoints[0].lb_endpoints[0].endpoint.address.pipe.path, /\/XDS$/),
    },
    {
      name: 'zipkin tracing',
      args: ['sidecar', '--zipkinAddress', 'zipkin.istio-system:9411'],
      check: (b) => assert.equal(b.tracing.http.typed_config.collector_cluster, 'zipkin'),
    },
    {
      name: 'statsd sink',
      args: ['sidecar', '--statsdUdpAddress', '127.0.0.1:8125'],
      check: (b) => assert.equal(b.stats_sinks[0].name, 'envoy.stat_sinks.statsd'),
    },
    {
      name: "mutual TLS to the discovery server is the relay's, not Envoy's",
      args: ['sidecar', '--controlPlaneAuthPolicy', 'MUTUAL_TLS'],
      check: (b) => {
        // Also true for NONE: the policy itself must reach the node metadata, as Istio's PROXY_CONFIG carries it.
        assert.equal(b.static_resources.clusters[0].transport_socket, undefined);
        assert.equal(b.node.metadata.PROXY_CONFIG.controlPlaneAuthPolicy, 'MUTUAL_TLS');
      },
    },
    {
      name: 'Kubernetes registry with metadata',
      args: ['sidecar', '--serviceregistry', 'Kubernetes', '--ip', '', '--connectTimeout', '250ms', '--serviceCluster', 'productpage.default'],
      env: {
        INSTANCE_IP: '198.19.4.6',
        POD_NAME: 'productpage-v1',
        POD_NAMESPACE: 'default',
        ISTIO_META_INTERCEPTION_MODE: 'REDIRECT',
        ISTIO_METAJSON_LABELS: '{"app":"productpage"}',
      },
      check: (b) => {
        assert.equal(b.node.id, 'sidecar~198.19.4.6~productpage-v1.default~default.svc.cluster.local');
        const { INTERCEPTION_MODE, LABELS, STATIC_LABELS, NAMESPACE, NAME, INSTANCE_IPS } = b.node.metadata;
        assert.deepEqual(
          { INTERCEPTION_MODE, LABELS, STATIC_LABELS, NAMESPACE, NAME },
          {
            INTERCEPTION_MODE: 'REDIRECT',
            LABELS: { app: 'productpage' },
            STATIC_LABELS: { app: 'productpage' },
            NAMESPACE: 'default',
            NAME: 'productpage-v1',
          },
        );
        assert.match(INSTANCE_IPS, /^198\.19\.4\.6(,|$)/);
        assert.equal(b.static_resources.clusters[0].connect_timeout, '0.25s');
      },
    },
    {
      name: 'readiness listener and agent cluster with the status server on',
      args: ['sidecar', '--statusPort', '15020'],
      check: (b) => assert.ok(b.static_resources.listeners.some((l: any) => l.address.socket_address.port_value === 15021)),
    },
    {
      name: 'no readiness listener with the status server off',
      args: ['sidecar', '--statusPort', '0'],
      check: (b) => assert.ok(!b.static_resources.listeners.some((l: any) => l.address.socket_address.port_value === 15021)),
    },
    {
      name: 'runtimeValues, no stats compression and a connection limit from PROXY_CONFIG',
      args: ['sidecar'],
      env: {
        PROXY_CONFIG: JSON.stringify({
          runtimeValues: { 'envoy.reloadable_features.a_feature': 'true', 're2.max_program_size.error_level': '1000' },
          statsCompression: false,
          proxyMetadata: { ISTIO_META_GLOBAL_DOWNSTREAM_MAX_CONNECTIONS: '5000' },
        }),
      },
      check: (b) => {
        assert.deepEqual(
          [
            b.layered_runtime.layers[0].static_layer['re2.max_program_size.error_level'],
            b.layered_runtime.layers[0].static_layer['envoy.reloadable_features.a_feature'],
          ],
          ['1000', true],
        );
        assert.equal(b.overload_manager.resource_monitors[0].typed_config.max_active_downstream_connections, 5000);
        assert.equal(b.static_resources.listeners[0].filter_chains[0].filters[0].typed_config.http_filters.length, 1);
      },
    },
    {
      name: 'JSON log lines for Envoy too',
      args: ['sidecar', '--log_as_json'],
      check: (b) => assert.equal(b.application_log_config.log_format.json_format.msg, '%j'),
    },
    {
      name: "the pod's stats annotations: histogram buckets, flush and eviction intervals",
      args: ['sidecar'],
      env: {
        ISTIO_METAJSON_ANNOTATIONS: JSON.stringify({
          'sidecar.istio.io/statsHistogramBuckets': '{"istiocustom":[1,5,10],"cluster.xds-grpc":[1,10]}',
          'sidecar.istio.io/statsFlushInterval': '10s',
          'sidecar.istio.io/statsEvictionInterval': '60s',
        }),
      },
      check: (b) => {
        assert.deepEqual([b.stats_flush_interval, b.stats_eviction_interval], ['10s', '60s']);
        assert.deepEqual(b.stats_config.histogram_bucket_settings.map((s: any) => s.match.prefix), ['cluster.xds-grpc', 'istiocustom']);
      },
    },
    {
      name: 'self discovery: local_cluster over ADS and deferred cluster creation; deferred stats always',
      args: ['sidecar'],
      env: { ISTIO_META_ENABLE_SELF_DISCOVERY: 'true' },
      check: (b) => {
        assert.deepEqual(b.cluster_manager, { local_cluster_name: 'local_cluster', enable_deferred_cluster_creation: true });
        assert.ok(b.static_resources.clusters.some((c: any) => c.name === 'local_cluster' && c.type === 'EDS'));
        assert.deepEqual(b.deferred_stat_options, { enable_deferred_creation_stats: true });
      },
    },
    { name: 'custom template', args: ['sidecar', '--templateFile', 'TEMPLATE'], check: (b) => assert.deepEqual(Object.keys(b), ['node', 'admin']) },
  ];

  for (const variant of variants) {
    it(variant.name, async () => {
      const args = variant.args.map((arg) => (arg === 'TEMPLATE' ? join(dir, 'template.json') : arg));
      const printed = await execa(
        nodeBin,
        [
          agentBin,
          'proxy',
          ...args,
          ...common.filter((flag, i) => !shadowed(args, common, i)),
          '--configPath',
          join(dir, 'config'),
          '--certDir',
          join(dir, 'certs'),
        ],
        {
          reject: false,
          env: variant.env ?? {},
          extendEnv: false,
        },
      );
      assert.equal(printed.exitCode, 0, printed.stderr);
      const bootstrap = JSON.parse(printed.stdout);
      variant.check(bootstrap);
      const file = join(dir, `${variant.name.replace(/\W+/g, '-')}.json`);
      await writeFile(file, printed.stdout);
      const validated = await execa(envoyBin, ['--mode', 'validate', '-c', file, '-l', 'error'], { reject: false });
      assert.equal(validated.exitCode, 0, `${validated.stdout}\n${validated.stderr}`);
    });
  }
});

/** A flag in `common` is dropped when the variant sets it itself. */
function shadowed(args: string[], common: string[], index: number): boolean {
  const flag = common[index]!.startsWith('--') ? common[index]! : common[index - 1]!;
  return flag !== '--print-bootstrap' && args.includes(flag);
}
