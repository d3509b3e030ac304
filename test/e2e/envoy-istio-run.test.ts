import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { startAgent, type RunningAgent } from '../support/agent.ts';
import { deferStop, suiteCleanup, tempDir } from '../support/cleanup.ts';
import { startPeer, type Peer } from '../support/peer.ts';
import { freePort } from '../support/ports.ts';
import { simpleHttpService } from '../support/resources.ts';

/** Envoy's own account of itself, from its admin port. */
async function admin(agent: RunningAgent, path: string): Promise<string> {
  const response = await fetch(`http://127.0.0.1:${agent.adminPort}${path}`);
  assert.equal(response.status, 200, path);
  return response.text();
}

/** Runs an agent that must refuse to start: exit 2, one stderr line, no Envoy. */
async function refused(agent: RunningAgent): Promise<string> {
  const result = await agent.exited;
  assert.equal(result.exitCode, 2, agent.stderr());
  const lines = agent.stderr().trim().split('\n');
  assert.equal(lines.length, 1, agent.stderr());
  assert.deepEqual(agent.envoyPids(), [], 'no Envoy started');
  await agent.stop();
  return lines[0]!;
}

describe('Envoy as Istio\'s injection template runs it', () => {
  const cleanup = suiteCleanup();
  let peer: Peer;
  let dir: string;

  before(async () => {
    peer = await startPeer(simpleHttpService({ listenerPort: await freePort(), upstreamPort: await freePort() }));
    cleanup.defer(() => peer.stop());
    dir = await tempDir(cleanup, 'pilot-agent-envoy-run-');
  });

  it('ISTIO_CPU_LIMIT, fileFlushInterval, the bootstrap override and Istio\'s stats tags reach the real Envoy', async () => {
    await using test = new AsyncDisposableStack();
    const override = join(dir, 'custom_bootstrap.yaml');
    await writeFile(override, 'node:\n  metadata:\n    DATADOG_AGENT: "$(HOST_IP):8126"\n');
    const agent = await startAgent({
      discoveryAddress: peer.address,
      env: {
        ISTIO_CPU_LIMIT: '1.5',
        HOST_IP: '198.19.9.7',
        ISTIO_BOOTSTRAP_OVERRIDE: override,
        PROXY_CONFIG: JSON.stringify({ fileFlushInterval: '0.250s', extraStatTags: ['dlp_status'] }),
      },
    });
    deferStop(test, agent, (result) => assert.equal(result.exitCode, 0, agent.stderr()));
    await agent.log.waitFor((entry) => entry.msg === 'epoch live', 30_000, 'epoch live');

    const options = (JSON.parse(await admin(agent, '/server_info')) as { command_line_options: Record<string, unknown> }).command_line_options;
    assert.equal(options.concurrency, 2, 'ISTIO_CPU_LIMIT 1.5 rounded up to 2 workers');
    assert.equal(options.file_flush_interval, '0.250s');
    assert.equal(options.local_address_ip_version, 'v4');
    assert.equal(options.skip_deprecated_logs, true, JSON.stringify(options));

    type BootstrapDump = { '@type': string; bootstrap: { node: { metadata: Record<string, unknown> }; stats_config: { stats_tags: { tag_name: string }[] } } };
    const dump = JSON.parse(await admin(agent, '/config_dump')) as { configs: BootstrapDump[] };
    const { bootstrap } = dump.configs.find((config) => config['@type'].endsWith('BootstrapConfigDump'))!;
    assert.equal(bootstrap.node.metadata.DATADOG_AGENT, '198.19.9.7:8126', 'the override is merged, $(HOST_IP) substituted');
    assert.equal(bootstrap.stats_config.stats_tags.length, 17, 'Istio\'s 16 tags and the extra one');
    assert.ok(bootstrap.stats_config.stats_tags.some((tag) => tag.tag_name === 'dlp_status'));

    // The labels dashboards group by: the xDS cluster's stats carry cluster_name instead of a name mangled into the metric.
    const metrics = await admin(agent, '/stats/prometheus');
    assert.match(metrics, /^envoy_cluster_upstream_cx_total\{cluster_name="xds-grpc"\} \d+$/m, metrics.slice(0, 2000));
    assert.doesNotMatch(metrics, /envoy_cluster_xds_grpc_/);
  });

  it('ProxyConfig concurrency wins over ISTIO_CPU_LIMIT, and ENVOY_SKIP_DEPRECATED_LOGS=false keeps the deprecation lines', async () => {
    await using test = new AsyncDisposableStack();
    const agent = await startAgent({
      discoveryAddress: peer.address,
      env: { ISTIO_CPU_LIMIT: '3', ENVOY_SKIP_DEPRECATED_LOGS: 'false', PROXY_CONFIG: JSON.stringify({ concurrency: 1 }) },
    });
    deferStop(test, agent, (result) => assert.equal(result.exitCode, 0, agent.stderr()));
    await agent.log.waitFor((entry) => entry.msg === 'epoch live', 30_000, 'epoch live');
    const options = (JSON.parse(await admin(agent, '/server_info')) as { command_line_options: Record<string, unknown> }).command_line_options;
    assert.equal(options.concurrency, 1);
    assert.equal(options.file_flush_interval, '1s', 'Istio\'s default, not Envoy\'s 10s');
    assert.ok(!options.skip_deprecated_logs, JSON.stringify(options));
  });

  it('a bootstrap override that is not YAML is exit 2 naming ISTIO_BOOTSTRAP_OVERRIDE and the file, before any Envoy', async () => {
    const override = join(dir, 'broken.yaml');
    await writeFile(override, 'node: [unclosed\n');
    const agent = await startAgent({ discoveryAddress: peer.address, env: { ISTIO_BOOTSTRAP_OVERRIDE: override } });
    assert.match(await refused(agent), new RegExp(`^pilot-agent: --bootstrapOverride \\(env ISTIO_BOOTSTRAP_OVERRIDE\\) ${override}: is not YAML or JSON`));
  });
});

/** A bootstrap of our own: admin where it says, one listener that answers by itself. */
function customBootstrap(adminPort: number, listenerPort: number): unknown {
  const direct = {
    name: 'envoy.filters.network.http_connection_manager',
    typed_config: {
      '@type': 'type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager',
      stat_prefix: 'custom',
      http_filters: [{ name: 'envoy.filters.http.router', typed_config: { '@type': 'type.googleapis.com/envoy.extensions.filters.http.router.v3.Router' } }],
      route_config: { virtual_hosts: [{ name: 'all', domains: ['*'], routes: [{ match: { prefix: '/' }, direct_response: { status: 200 } }] }] },
    },
  };
  return {
    admin: { address: { socket_address: { address: '127.0.0.1', port_value: adminPort } } },
    static_resources: {
      listeners: [{ name: 'custom', address: { socket_address: { address: '127.0.0.1', port_value: listenerPort } }, filter_chains: [{ filters: [direct] }] }],
    },
  };
}

describe('a custom bootstrap\'s admin port', () => {
  const cleanup = suiteCleanup();
  let dir: string;
  before(async () => (dir = await tempDir(cleanup, 'pilot-agent-custom-admin-')));

  it('is the one the agent watches when --proxyAdminPort is not given: the epoch goes LIVE', async () => {
    await using test = new AsyncDisposableStack();
    const adminPort = await freePort();
    const file = join(dir, 'admin-elsewhere.json');
    await writeFile(file, JSON.stringify(customBootstrap(adminPort, await freePort())));
    // The default --proxyAdminPort (15000) is not where this Envoy's admin listens.
    const agent = await startAgent({ discoveryAddress: '127.0.0.1:1', adminPortFromFile: adminPort, args: ['--customConfigFile', file] });
    deferStop(test, agent, (result) => assert.equal(result.exitCode, 0, agent.stderr()));
    await agent.log.waitFor((entry) => entry.msg === 'epoch live', 30_000, 'epoch live');
    const taken = agent.log.entries.find((entry) => entry.msg === 'admin port taken from the custom bootstrap');
    assert.equal(taken?.adminPort, adminPort, 'the agent says where it watches admin');
  });

  it('that disagrees with a given --proxyAdminPort is exit 2 naming both, before any Envoy', async () => {
    const fileAdmin = await freePort();
    const file = join(dir, 'admin-disagrees.json');
    await writeFile(file, JSON.stringify(customBootstrap(fileAdmin, await freePort())));
    const agent = await startAgent({ discoveryAddress: '127.0.0.1:1', args: ['--customConfigFile', file] });
    const line = await refused(agent);
    assert.match(
      line,
      new RegExp(`^pilot-agent: --proxyAdminPort: ${agent.adminPort} disagrees with --customConfigFile ${file}, whose admin listens on port ${fileAdmin}`),
    );
  });
});
