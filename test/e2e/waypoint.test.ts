/**
 * `pilot-agent proxy waypoint`, as Istio's waypoint.yaml runs it for ambient:
 * the agent introduces itself as `waypoint~…`, speaks Delta xDS whatever it
 * is told, and renders Istio's metadata discovery extension. Upstream Envoy
 * has no such extension: there the agent exits 2 on Envoy's refusal of the
 * bootstrap, naming the extension and the build that has it. Past that point a stand-in
 * for Istio's build (the real Envoy, handed the bootstrap without that one
 * extension) shows the rest of the agent's part working.
 */
import assert from 'node:assert/strict';
import { chmod, writeFile } from 'node:fs/promises';
import { get as httpGet } from 'node:http';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { execa } from 'execa';
import { startAgent } from '../support/agent.ts';
import { deferStop, tempDir } from '../support/cleanup.ts';
import { agentBin, envoyBin, nodeBin } from '../support/paths.ts';
import { startPeer } from '../support/peer.ts';
import { pollUntil } from '../support/poll.ts';
import { freePort } from '../support/ports.ts';
import { edsCluster, endpoints, httpListener, routeConfig, simpleHttpService } from '../support/resources.ts';
import { get, waitForStatus } from '../support/status-agent.ts';
import { startUpstream } from '../support/upstream.ts';

/** The real Envoy, given each bootstrap without the metadata_discovery extension (what Istio's build would register); exec keeps the pid. */
const standInScript = (envoy: string) => `#!/usr/bin/env python3
import json, os, sys
args = sys.argv[1:]
if '-c' in args:
    at = args.index('-c') + 1
    with open(args[at]) as f:
        bootstrap = json.load(f)
    bootstrap['bootstrap_extensions'] = [e for e in bootstrap.get('bootstrap_extensions', []) if e.get('name') != 'metadata_discovery']
    args[at] = args[at] + '.upstream.json'
    with open(args[at], 'w') as f:
        json.dump(bootstrap, f)
os.execv(${JSON.stringify(envoy)}, [${JSON.stringify(envoy)}] + args)
`;

/** The stand-in for Istio's Envoy build, in a temp dir of `undo`. */
async function standInEnvoy(undo: AsyncDisposableStack): Promise<string> {
  const dir = await tempDir(undo, 'waypoint-');
  const standIn = join(dir, 'envoy-with-metadata-discovery');
  await writeFile(standIn, standInScript(envoyBin));
  await chmod(standIn, 0o755);
  return standIn;
}

const t = (name: string) => `type.googleapis.com/${name}`;

/**
 * A waypoint's shape in miniature: the pod-facing listener routes to a cluster
 * whose endpoint is the internal listener `connect_originate` (as Istio's
 * waypoint tunnels through it), which routes to the upstream. The pooled
 * connection into the internal listener stays open after the client leaves.
 */
function throughInternalListener(listenerPort: number, upstreamPort: number): unknown[] {
  const internalCluster = {
    '@type': t('envoy.config.cluster.v3.Cluster'), name: 'to_connect_originate', type: 'STATIC', connect_timeout: '1s',
    load_assignment: {
      cluster_name: 'to_connect_originate',
      endpoints: [{ lb_endpoints: [{ endpoint: { address: { envoy_internal_address: { server_listener_name: 'connect_originate' } } } }] }],
    },
  };
  const internal = httpListener('connect_originate', 0, 'to_upstream') as Record<string, unknown>;
  delete internal.address;
  return [
    httpListener('main', listenerPort, 'to_internal'),
    routeConfig('to_internal', [{ prefix: '/', cluster: 'to_connect_originate' }]),
    internalCluster,
    { ...internal, internal_listener: {} },
    routeConfig('to_upstream', [{ prefix: '/', cluster: 'upstream' }]),
    edsCluster('upstream'),
    endpoints('upstream', upstreamPort),
  ];
}

/** One GET on a connection of its own, closed after the answer (Connection: close); the body, or '' when refused. */
function getOnce(port: number): Promise<string> {
  return new Promise((resolve) => {
    const request = httpGet({ host: '127.0.0.1', port, path: '/', agent: false, timeout: 5000 }, (response) => {
      let body = '';
      response.setEncoding('utf8').on('data', (chunk: string) => (body += chunk)).on('end', () => resolve(body));
    });
    request.on('error', () => resolve('')).on('timeout', () => request.destroy());
  });
}

/** Envoy's downstream_cx_active gauges of listeners, by name. */
async function activeByListener(adminPort: number): Promise<Record<string, number>> {
  const answer = await get(adminPort, '/stats?usedonly&filter=downstream_cx_active$');
  return Object.fromEntries(answer.body.trim().split('\n').filter(Boolean).map((line) => line.split(': ')).map(([name, value]) => [name!, Number(value)]));
}

describe('a waypoint, as far as upstream Envoy goes', () => {
  it('on upstream Envoy exits 2 at the bootstrap, with one line naming Istio\'s metadata discovery extension and the build that has it', async () => {
    await using undo = new AsyncDisposableStack();
    const peer = await startPeer([]);
    undo.defer(() => peer.stop());
    const agent = await startAgent({ type: 'waypoint', discoveryAddress: peer.address });
    undo.defer(async () => void (await agent.stop()));
    const result = await agent.exited;
    assert.equal(result.exitCode, 2, agent.stderr());
    const lines = agent.stderr().trim().split('\n');
    assert.equal(lines.length, 1, agent.stderr());
    assert.match(lines[0]!, /Envoy rejects the bootstrap: .*istio\.workload\.BootstrapExtension is in Istio's own Envoy build, not upstream Envoy/);
    assert.ok(agent.envoyPids().length <= 1, 'no retry of a bootstrap Envoy refuses');
    await agent.assertNoEnvoyLeft();
  });

  it('with the extension registered, introduces itself as waypoint~ over Delta xDS even when told State of the World, and goes ready', async () => {
    await using undo = new AsyncDisposableStack();
    const standIn = await standInEnvoy(undo);
    const peer = await startPeer(simpleHttpService({ listenerPort: await freePort(), upstreamPort: await freePort() }));
    undo.defer(() => peer.stop());
    const [statusPort, readinessPort] = [await freePort(), await freePort()];
    const agent = await startAgent({
      type: 'waypoint', discoveryAddress: peer.address, env: { ISTIO_DELTA_XDS: 'false' },
      args: ['--binaryPath', standIn, '--statusPort', String(statusPort), '--readinessPort', String(readinessPort)],
    });
    deferStop(undo, agent);
    await waitForStatus(statusPort, '/healthz/ready', (answer) => answer.status === 200, 30_000);
    const node = await peer.log.waitFor((entry) => entry.event === 'node', 10_000, 'the node on the discovery stream');
    assert.match(String(node.node), /^waypoint~127\.0\.0\.1~/);
    const streams = peer.log.entries.filter((entry) => entry.event === 'stream_open').map((entry) => entry.type);
    assert.ok(streams.length > 0 && streams.every((type) => type === 'delta'), `streams: ${streams.join(',')}`);
    const forced = agent.log.entries.filter((entry) => entry.level >= 40 && /waypoint speaks Delta xDS only/.test(entry.msg));
    assert.deepEqual(forced.map((entry) => [entry.msg, entry.flag]), [
      ['a waypoint speaks Delta xDS only, as Istio forces it: --deltaXds=false (ISTIO_DELTA_XDS) ignored', 'deltaXds'],
    ]);
  });

  it('a sidecar whose node asks for metadata discovery gets the extension on Delta, and on State of the World one warning instead', async () => {
    await using undo = new AsyncDisposableStack();
    const dir = await tempDir(undo, 'metadata-discovery-');
    const print = (delta: string) =>
      execa(nodeBin, [agentBin, 'proxy', 'sidecar', '--serviceregistry', 'Other', '--ip', '198.19.1.3', '--discoveryAddress', '127.0.0.1:15010',
        '--configPath', join(dir, 'config'), '--certDir', join(dir, 'certs'), '--print-bootstrap'], {
        env: { PEER_METADATA_DISCOVERY: 'true', ISTIO_DELTA_XDS: delta }, extendEnv: false, reject: false,
      });
    const names = (stdout: string) => (JSON.parse(stdout) as { bootstrap_extensions: { name: string }[] }).bootstrap_extensions.map((e) => e.name);
    const delta = await print('true');
    assert.equal(delta.exitCode, 0, delta.stderr);
    assert.deepEqual(names(delta.stdout), ['metadata_discovery', 'envoy.bootstrap.internal_listener']);
    assert.doesNotMatch(delta.stderr, /metadata discovery/);
    const sotw = await print('false');
    assert.equal(sotw.exitCode, 0, sotw.stderr);
    assert.deepEqual(names(sotw.stdout), ['envoy.bootstrap.internal_listener']);
    assert.equal(sotw.stderr.split('\n').filter((line) => /metadata discovery is not rendered: it needs Delta xDS/.test(line)).length, 1, sotw.stderr);
  });

  it('with EXIT_ON_ZERO_ACTIVE_CONNECTIONS its drain ends with a connection still open on an envoy_internal_ listener, as Istio skips those', async () => {
    await using undo = new AsyncDisposableStack();
    const standIn = await standInEnvoy(undo);
    const upstream = await startUpstream('through the tunnel');
    undo.defer(() => upstream.close());
    const listenerPort = await freePort();
    const peer = await startPeer(throughInternalListener(listenerPort, upstream.port));
    undo.defer(() => peer.stop());
    const agent = await startAgent({
      type: 'waypoint', discoveryAddress: peer.address, env: { EXIT_ON_ZERO_ACTIVE_CONNECTIONS: 'true' },
      args: ['--binaryPath', standIn, '--terminationDrainDuration', '120s', '--minimumDrainDuration', '0s'],
    });
    deferStop(undo, agent);
    // One request with Connection: close: the client's connection ends, the pooled one into connect_originate stays.
    await pollUntil(() => getOnce(listenerPort), { what: 'the upstream through connect_originate', timeoutMs: 30_000, accept: (body) => body === 'through the tunnel' });
    const settled = await pollUntil(() => activeByListener(agent.adminPort), {
      what: 'the client gone and the tunnel open', timeoutMs: 15_000,
      accept: (active) => active['listener.127.0.0.1_' + listenerPort + '.downstream_cx_active'] === 0 && active['listener.envoy_internal_connect_originate.downstream_cx_active'] === 1,
    });
    assert.equal(settled['listener.envoy_internal_connect_originate.downstream_cx_active'], 1);
    const stopping = agent.stop('SIGTERM');
    const done = await agent.log.waitFor((entry) => /^no active downstream connections|^waiting for active|^drain duration over/.test(entry.msg), 30_000, 'the drain wait');
    assert.equal(done.msg, 'no active downstream connections; stopping', `the internal listener's connection is not waited on (${done.activeConnections})`);
    assert.equal((await stopping).exitCode, 0);
  });
});
