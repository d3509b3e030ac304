/**
 * The DNS proxy end to end, in a pod's network namespace set up as
 * Kubernetes and the injection template would: resolv.conf names the
 * cluster DNS, which answers from a namespace of its own at a routed
 * address (as kube-dns' ClusterIP); istio-init's capture is this agent's
 * `istio-iptables` with the args and env `pilot-agent inject` renders for
 * `proxyMetadata: {DNS_CAPTURE: "true"}`; the agent runs as uid 1337. The
 * name table comes over NDS from the go-control-plane peer, the app resolves
 * with getaddrinfo, c-ares and raw queries as uid 65534, and a request to a
 * mesh name is captured to Envoy's 15001 and carried to the upstream.
 */
import assert from 'node:assert/strict';
import { chmod, chown } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { before, describe, it } from 'node:test';
import { execa } from 'execa';
import { startAgent, type RunningAgent } from '../support/agent.ts';
import { suiteCleanup, tempDir, type Cleanup } from '../support/cleanup.ts';
import {
  appUid,
  clusterDnsIp,
  getent,
  proxyUid,
  runClient,
  runIstioInit,
  startClusterDns,
  startResolver,
  writeNetnsResolvConf,
  type ClientResult,
  type ResolverLogEntry,
} from '../support/dns-netns.ts';
import { uidCannotRunCheckout } from '../support/paths.ts';
import { makeNetns, netnsSkipReason, type Netns } from '../support/netns.ts';
import { startPeer, type NameTableJson, type Peer } from '../support/peer.ts';

const skip =
  (await netnsSkipReason()) ??
  ((await execa('iptables', ['--version'], { reject: false })).exitCode === 0 ? undefined : 'iptables is missing (run scripts/setup-iptables.sh)') ??
  uidCannotRunCheckout(appUid) ??
  uidCannotRunCheckout(proxyUid);
const t = (name: string) => `type.googleapis.com/${name}`;
const vips = { db: '198.19.240.1', reviews: '198.19.240.2' };
/** The port the app dials on a VIP; the capture sends it to Envoy's outbound listener. */
const appPort = 18080;
const outboundPort = 15001;
const statusPort = 15020;

const nameTable: NameTableJson = {
  // A ServiceEntry name no cluster DNS knows, with an auto-allocated VIP.
  'db.legacy.internal': { ips: [vips.db], registry: 'External' },
  'reviews.default.svc.cluster.local': { ips: [vips.reviews], registry: 'Kubernetes', shortname: 'reviews', namespace: 'default' },
  // A headless service: 80 addresses are more than 512 bytes of UDP.
  'headless.mesh.internal': { ips: Array.from({ length: 80 }, (_, at) => `10.9.0.${at + 1}`), registry: 'External' },
};

/** Envoy's outbound listener, where istio-init's capture sends the app's TCP → route → a static cluster in the root namespace. */
function meshResources(upstream: { host: string; port: number }): unknown[] {
  return [
    {
      '@type': t('envoy.config.listener.v3.Listener'),
      name: 'outbound',
      address: { socket_address: { address: '0.0.0.0', port_value: outboundPort } },
      filter_chains: [
        {
          filters: [
            {
              name: 'envoy.filters.network.http_connection_manager',
              typed_config: {
                '@type': t('envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager'),
                stat_prefix: 'outbound',
                route_config: { name: 'r', virtual_hosts: [{ name: 'all', domains: ['*'], routes: [{ match: { prefix: '/' }, route: { cluster: 'db' } }] }] },
                http_filters: [{ name: 'envoy.filters.http.router', typed_config: { '@type': t('envoy.extensions.filters.http.router.v3.Router') } }],
              },
            },
          ],
        },
      ],
    },
    {
      '@type': t('envoy.config.cluster.v3.Cluster'),
      name: 'db',
      type: 'STATIC',
      connect_timeout: '1s',
      load_assignment: {
        cluster_name: 'db',
        endpoints: [{ lb_endpoints: [{ endpoint: { address: { socket_address: { address: upstream.host, port_value: upstream.port } } } }] }],
      },
    },
  ];
}

interface World {
  netns: Netns;
  peer: Peer;
  resolverLog: () => ResolverLogEntry[];
  /** The agent's dir, owned by the proxy uid. */
  dir: string;
}

/** `loopbackResolver`: the resolver on the pod's own loopback (as systemd-resolved's 127.0.0.53) instead of the cluster DNS. */
async function setUp(cleanup: Cleanup, table: NameTableJson | undefined, options: { loopbackResolver?: string } = {}): Promise<World> {
  const netns = await makeNetns('dns');
  cleanup.defer(() => netns.remove());
  cleanup.defer(await writeNetnsResolvConf(netns.name, options.loopbackResolver ?? clusterDnsIp));
  const clusterDns = options.loopbackResolver ? await startResolver(netns.name, options.loopbackResolver) : await startClusterDns(netns.name);
  cleanup.defer(() => clusterDns.stop());
  // istio-init reads resolv.conf's nameserver for its DNS rules: after it is written.
  await runIstioInit(netns.name);
  // The VIPs leave the pod by its link, as a ClusterIP would: on lo, istio-init's rules would let the app's loopback traffic through uncaptured.
  await execa('ip', ['-n', netns.name, 'route', 'add', '198.19.240.0/24', 'via', netns.hostIp], { timeout: 10_000 });
  const upstream: Server = createServer((_request, response) => response.end('hello from the legacy db'));
  await new Promise<void>((resolve) => upstream.listen(0, netns.hostIp, resolve));
  cleanup.defer(() => new Promise<void>((resolve) => (upstream.closeAllConnections(), upstream.close(() => resolve()))));
  const peer = await startPeer(meshResources({ host: netns.hostIp, port: (upstream.address() as { port: number }).port }), {
    address: `${netns.hostIp}:0`,
    nameTable: table,
  });
  cleanup.defer(() => peer.stop());
  const dir = await tempDir(cleanup, 'pilot-agent-dns-');
  await chown(dir, proxyUid, proxyUid);
  await chmod(dir, 0o755);
  return { netns, peer, resolverLog: () => clusterDns.log.entries, dir };
}

/** DNS on through the env, or (`viaProxyConfig`) through ProxyConfig's proxyMetadata in PROXY_CONFIG. */
async function startDnsAgent(world: World, options: { delta?: boolean; viaProxyConfig?: boolean } = {}): Promise<RunningAgent> {
  const capture = { ISTIO_META_DNS_CAPTURE: 'true' };
  return startAgent({
    discoveryAddress: `${world.netns.hostIp}:${world.peer.port}`,
    // As the template runs it: uid 1337, which istio-init's rules let through (its own upstream DNS included).
    wrap: ['ip', 'netns', 'exec', world.netns.name, 'setpriv', `--reuid=${proxyUid}`, `--regid=${proxyUid}`, '--clear-groups', '--'],
    dir: world.dir,
    // The pod's own cwd: the relative defaults (--meshConfig ./etc/istio/config/mesh) never reach into the checkout, which uid 1337 may not enter.
    cwd: world.dir,
    args: ['--domain', 'default.svc.cluster.local', '--statusPort', String(statusPort), ...(options.delta ? ['--deltaXds'] : ['--deltaXds=false'])],
    env: { ...(options.viaProxyConfig ? { PROXY_CONFIG: JSON.stringify({ proxyMetadata: capture }) } : capture), POD_NAMESPACE: 'default' },
  });
}

/** Polls until the app resolves `name` (the table arrives a moment after Envoy's config). */
async function untilResolved(world: World, name: string, server = clusterDnsIp, timeoutMs = 20_000): Promise<ClientResult> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const [result] = await runClient(world.netns.name, [{ op: 'raw', name, proto: 'udp', server }]);
    if (result!.answers?.length || Date.now() > deadline) return result!;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** Polls until the app's request to a VIP, captured to Envoy's 15001, answers 200: Envoy's config lands a moment after the NDS subscription. */
async function untilListening(world: World, timeoutMs = 20_000): Promise<ClientResult> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const [result] = await runClient(world.netns.name, [{ op: 'http', url: `http://${vips.db}:${appPort}/` }]);
    if (result!.status === 200 || Date.now() > deadline) return result!;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

const status = async (world: World, path: string) => (await runClient(world.netns.name, [{ op: 'http', url: `http://127.0.0.1:${statusPort}${path}` }], 0))[0]!;

describe('DNS proxy in a network namespace with DNS capture', { skip, timeout: 180_000 }, () => {
  for (const mode of ['sotw', 'delta'] as const) {
    describe(`name table over NDS (${mode})`, () => {
      const cleanup = suiteCleanup();

      it('resolves mesh names, short forms and VIPs for the app, forwards the rest, and Envoy carries the request', async () => {
        const world = await setUp(cleanup, nameTable);
        // Delta also turns DNS on the other way Istio does: ProxyConfig's proxyMetadata.
        const agent = await startDnsAgent(world, { delta: mode === 'delta', viaProxyConfig: mode === 'delta' });
        cleanup.defer(async () => void (await agent.stop()));
        if (process.env.DNS_TEST_DEBUG) cleanup.defer(() => console.log(agent.log.entries.map((entry) => JSON.stringify(entry)).join('\n')));
        assert.deepEqual((await untilResolved(world, 'db.legacy.internal')).answers, [`A db.legacy.internal ${vips.db}`]);
        assert.equal((await untilListening(world)).status, 200);
        const results = await runClient(world.netns.name, [
          { op: 'lookup', name: 'db.legacy.internal' },
          { op: 'lookup', name: 'reviews' },
          { op: 'lookup', name: 'reviews.default' },
          { op: 'resolve4', name: 'reviews.default.svc.cluster.local' },
          { op: 'lookup', name: 'external.test' },
          { op: 'resolve4', name: 'external.test' },
          { op: 'raw', name: 'nowhere.test', proto: 'udp' },
          { op: 'http', url: `http://db.legacy.internal:${appPort}/` },
        ]);
        const [db, reviews, reviewsNs, reviewsFqdn, external, externalAres, nowhere, http] = results;
        assert.deepEqual(db!.addresses, [vips.db], JSON.stringify(db));
        assert.deepEqual(reviews!.addresses, [vips.reviews], JSON.stringify(reviews));
        assert.deepEqual(reviewsNs!.addresses, [vips.reviews]);
        assert.deepEqual(reviewsFqdn!.addresses, [vips.reviews]);
        // Forwarded to the cluster DNS by the agent, whose own queries (uid 1337) istio-init's rules leave alone: no loop.
        assert.deepEqual(external!.addresses, ['198.19.100.7'], JSON.stringify(external));
        assert.deepEqual(externalAres!.addresses, ['198.19.100.7']);
        assert.equal(nowhere!.rcode, 3, 'the resolver\'s NXDOMAIN comes back as is');
        assert.deepEqual(
          { status: http!.status, body: http!.body },
          { status: 200, body: 'hello from the legacy db' },
          'the app reaches the upstream by name, through Envoy',
        );
        assert.ok(world.resolverLog().some((entry) => entry.name === 'external.test'), 'the resolver saw the forwarded query');
        // Had the capture taken the agent's own forwards, they would have come back to it and never reached the resolver.
        const upstreamRequests = Number(/^istio_agent_dns_upstream_requests_total (\d+)/m.exec((await status(world, '/stats/prometheus')).body!)?.[1]);
        assert.equal(
          upstreamRequests,
          world.resolverLog().filter((entry) => entry.event === 'query').length,
          'every forward the agent sent reached the resolver',
        );
        assert.ok(!world.resolverLog().some((entry) => entry.name?.startsWith('db.legacy.internal')), 'mesh names never reach the resolver');
        assert.match(await getent(world.netns.name, 'reviews'), /^198\.19\.240\.2\s+reviews/);
        assert.match(await getent(world.netns.name, 'db.legacy.internal'), new RegExp(`^${vips.db.replaceAll('.', '\\.')}\\s+db\\.legacy\\.internal`));
        // The agent ACKed the tables itself; Envoy never saw the type.
        const ndsRequests = world.peer.log.entries.filter((entry) => entry.event === 'request' && entry.typeUrl === t('istio.networking.nds.v1.NameTable'));
        assert.ok(ndsRequests.some((entry) => entry.nonce && !entry.error), `an NDS ACK: ${JSON.stringify(ndsRequests)}`);
        const relayed = JSON.parse((await status(world, '/debug/xds')).body!) as { types: Record<string, { responses: number }> };
        assert.ok(relayed.types[t('envoy.config.listener.v3.Listener')]?.responses, 'Envoy got its listeners');
        assert.equal(relayed.types[t('istio.networking.nds.v1.NameTable')], undefined, 'no NDS response was relayed to Envoy');
      });
    });
  }

  describe('a resolver on the pod\'s loopback, under the same istio-init rules', () => {
    const cleanup = suiteCleanup();

    it('forwards to 127.0.0.53 over UDP and TCP: the agent (uid 1337) is not captured, the app is', async () => {
      const loopback = '127.0.0.53';
      const world = await setUp(cleanup, nameTable, { loopbackResolver: loopback });
      const agent = await startDnsAgent(world);
      cleanup.defer(async () => void (await agent.stop()));
      assert.deepEqual((await untilResolved(world, 'db.legacy.internal', loopback)).answers, [`A db.legacy.internal ${vips.db}`]);
      const [udp, tcp, known] = await runClient(world.netns.name, [
        { op: 'raw', name: 'external.test', proto: 'udp', server: loopback },
        { op: 'raw', name: 'external.test', proto: 'tcp', server: loopback },
        { op: 'raw', name: 'db.legacy.internal', proto: 'udp', server: loopback },
      ]);
      assert.deepEqual([udp!.answers, udp!.aa], [['A external.test 198.19.100.7'], false], JSON.stringify(udp));
      assert.deepEqual([tcp!.answers, tcp!.aa], [['A external.test 198.19.100.7'], false], JSON.stringify(tcp));
      assert.deepEqual(
        [known!.answers, known!.aa],
        [[`A db.legacy.internal ${vips.db}`], true],
        "the app's query to the loopback resolver was captured to the agent",
      );
      const upstreamRequests = Number(/^istio_agent_dns_upstream_requests_total (\d+)/m.exec((await status(world, '/stats/prometheus')).body!)?.[1]);
      const queries = world.resolverLog().filter((entry) => entry.event === 'query');
      assert.deepEqual(
        queries.map((entry) => [entry.proto, entry.name]),
        [
          ['udp', 'external.test'],
          ['tcp', 'external.test'],
        ],
        "only the agent's forwards reached the resolver",
      );
      assert.equal(upstreamRequests, queries.length);
    });
  });

  describe('readiness, TCP and truncation, metrics, and the kept table after a restart (sotw)', () => {
    const cleanup = suiteCleanup();
    let world: World;
    let agent: RunningAgent;
    let listening: ClientResult;
    let firstTable: Promise<ClientResult> | undefined;
    /** The peer sends the name table once; resolves with the first answer from it (each test that needs the table asks, so each runs alone too). */
    const tableServed = () => (firstTable ??= world.peer.setNameTable(nameTable).then(() => untilResolved(world, 'db.legacy.internal')));

    before(async () => {
      world = await setUp(cleanup, undefined);
      agent = await startDnsAgent(world);
      cleanup.defer(async () => void (await agent.stop()));
      if (process.env.DNS_TEST_DEBUG) cleanup.defer(() => console.log(agent.log.entries.map((entry) => JSON.stringify(entry)).join('\n')));
      // Envoy has its config (the listener answers) while the name table has not come.
      await agent.log.waitFor((entry) => entry.msg === 'subscribed to the DNS name table', 20_000);
      listening = await untilListening(world);
    });

    it('is 503 and SERVFAILs until the first table', async () => {
      assert.equal(listening.status, 200, JSON.stringify(listening));
      const [before] = await runClient(world.netns.name, [{ op: 'raw', name: 'db.legacy.internal', proto: 'udp' }]);
      assert.equal(before!.rcode, 2, 'SERVFAIL before the first table, as Istio');
      const notReady = await status(world, '/healthz/ready');
      assert.equal(notReady.status, 503);
      assert.match(notReady.body!, /name table/);
    });

    it('answers and is ready once the first table comes, and shows the table on /debug/ndsz', async () => {
      assert.deepEqual((await tableServed()).answers, [`A db.legacy.internal ${vips.db}`]);
      assert.equal((await status(world, '/healthz/ready')).status, 200);
      const ndsz = JSON.parse((await status(world, '/debug/ndsz')).body!) as {
        loaded: boolean;
        source: string;
        entries: number;
        names: number;
        version: string;
        ageSeconds: number;
        table: Record<string, string[]>;
      };
      assert.equal(ndsz.loaded, true);
      assert.equal(ndsz.source, 'nds');
      assert.equal(ndsz.entries, 3);
      assert.deepEqual(ndsz.table['db.legacy.internal'], [vips.db]);
      assert.ok(ndsz.version && ndsz.ageSeconds >= 0);
    });

    it('truncates big answers over UDP, answers them whole over TCP, and counts the queries in its metrics', async () => {
      await tableServed();
      const [udp, tcp, ares, bigUdp, bigAres] = await runClient(world.netns.name, [
        { op: 'raw', name: 'headless.mesh.internal', proto: 'udp' },
        { op: 'raw', name: 'headless.mesh.internal', proto: 'tcp' },
        { op: 'resolve4', name: 'headless.mesh.internal' },
        { op: 'raw', name: 'big.test', proto: 'udp' },
        { op: 'resolve4', name: 'big.test' },
      ]);
      assert.equal(udp!.tc, true, 'our own answer is truncated to 512 bytes over UDP');
      assert.ok(udp!.answers!.length > 0 && udp!.answers!.length < 80, `${udp!.answers!.length} answers`);
      assert.equal(tcp!.tc, false);
      assert.equal(tcp!.answers!.length, 80, 'over TCP the whole answer');
      assert.equal(ares!.addresses!.length, 80, 'c-ares retries over TCP after TC');
      assert.equal(bigUdp!.tc, true, 'the resolver\'s truncated answer comes back as is');
      assert.equal(bigAres!.addresses!.length, 100, 'the TCP retry is forwarded over TCP');
      assert.ok(world.resolverLog().some((entry) => entry.name === 'big.test' && entry.proto === 'tcp'));

      const metrics = (await status(world, '/stats/prometheus')).body!;
      const value = (name: string) => Number(new RegExp(`^${name} (\\d+)`, 'm').exec(metrics)?.[1]);
      assert.ok(value('istio_agent_dns_requests_total') >= 8, metrics.split('\n').filter((line) => line.startsWith('istio_agent_dns')).join('\n'));
      assert.ok(value('istio_agent_dns_upstream_requests_total') >= 2);
      assert.match(metrics, /^istio_agent_dns_upstream_request_duration_seconds_count \d+/m);
      assert.match(metrics, /^istio_agent_dns_upstream_failures_total 0/m);
    });

    it('a restarted agent answers from the kept table with the discovery server gone', async () => {
      await tableServed();
      // The discovery server goes away; a new agent on the same --configPath answers from the kept table.
      assert.equal((await agent.stop()).exitCode, 0);
      await world.peer.stop();
      const restarted = await startDnsAgent(world);
      cleanup.defer(async () => void (await restarted.stop()));
      assert.deepEqual((await untilResolved(world, 'db.legacy.internal')).answers, [`A db.legacy.internal ${vips.db}`]);
      assert.deepEqual((await runClient(world.netns.name, [{ op: 'lookup', name: 'reviews' }]))[0]!.addresses, [vips.reviews]);
      const kept = JSON.parse((await status(world, '/debug/ndsz?summary')).body!) as { source: string; table?: unknown };
      assert.equal(kept.source, 'kept');
      assert.equal(kept.table, undefined, '?summary leaves the names out');
    });
  });
});
