/**
 * Proxyless gRPC (DISABLE_ENVOY=true): no Envoy. The agent asks the CA for
 * the workload certificate, keeps it in OUTPUT_CERTS, writes the gRPC
 * bootstrap and relays xDS. A real @grpc/grpc-js-xds client and server read
 * that bootstrap, get their listeners, clusters and mTLS settings from the
 * discovery peer through the agent, and call each other over mTLS with the
 * CA's certificates (file_watcher); after a rotation, calls go on.
 */
import assert from 'node:assert/strict';
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { Client, type sendUnaryData, type ServerUnaryCall, credentials, ServerCredentials } from '@grpc/grpc-js';
import * as xds from '@grpc/grpc-js-xds';
import { startAgent, type RunningAgent } from '../support/agent.ts';
import { startCaPeer, type CaPeer } from '../support/ca-peer.ts';
import { deferStop, suiteCleanup, tempDir } from '../support/cleanup.ts';
import { issueServerPair, makeCsrSigner } from '../support/csr-signer.ts';
import { startPeer, type Peer } from '../support/peer.ts';
import { freePort } from '../support/ports.ts';
import { within } from '../support/within.ts';
import { edsCluster, endpoints, routeConfig } from '../support/resources.ts';
import { pollUntil } from '../support/poll.ts';

const t = (name: string) => `type.googleapis.com/${name}`;
const identity = 'spiffe://cluster.local/ns/default/sa/app';
const token = 'projected-token-for-app';
const istiodName = 'istiod.istio-system.svc';
const raw = (message: Buffer) => message;
const sayPath = '/test.Echo/Say';
const tls = (kind: 'Upstream' | 'Downstream', context: object, extra: object = {}) => ({
  name: 'envoy.transport_sockets.tls',
  typed_config: { '@type': t(`envoy.extensions.transport_sockets.tls.v3.${kind}TlsContext`), common_tls_context: context, ...extra },
});
const provider = (certificate: string) => ({ instance_name: 'default', certificate_name: certificate });

/** What istiod sends a gRPC client: an API listener named like the target, and an mTLS cluster checking the server's SPIFFE id. */
function clientResources(serverPort: number): unknown[] {
  const cluster = {
    ...(edsCluster('echo') as object),
    transport_socket: tls('Upstream', {
      tls_certificate_provider_instance: provider('default'),
      combined_validation_context: {
        default_validation_context: { ca_certificate_provider_instance: provider('ROOTCA'), match_subject_alt_names: [{ exact: identity }] },
      },
    }),
  };
  const assignment = endpoints('echo', serverPort) as { endpoints: object[] };
  return [
    {
      '@type': t('envoy.config.listener.v3.Listener'),
      name: 'echo.test',
      api_listener: { api_listener: {
        '@type': t('envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager'),
        rds: { route_config_name: 'echo_route', config_source: { ads: {}, resource_api_version: 'V3' } },
        http_filters: [{ name: 'router', typed_config: { '@type': t('envoy.extensions.filters.http.router.v3.Router') } }],
      } },
    },
    routeConfig('echo_route', [{ prefix: '', cluster: 'echo' }]),
    cluster,
    { ...assignment, endpoints: assignment.endpoints.map((group) => ({ ...group, locality: { region: 'local' }, load_balancing_weight: 1 })) },
  ];
}

/** What istiod sends a gRPC server: its inbound listener under the bootstrap's name template, mTLS required. */
function serverListener(port: number): unknown {
  return {
    '@type': t('envoy.config.listener.v3.Listener'),
    name: `xds.istio.io/grpc/lds/inbound/127.0.0.1:${port}`,
    address: { socket_address: { address: '127.0.0.1', port_value: port } },
    filter_chains: [
      {
        filters: [
          {
            name: 'envoy.filters.network.http_connection_manager',
            typed_config: {
              '@type': t('envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager'),
              stat_prefix: 'inbound',
              route_config: {
                name: 'inbound',
                virtual_hosts: [{ name: 'inbound', domains: ['*'], routes: [{ match: { prefix: '/' }, non_forwarding_action: {} }] }],
              },
              http_filters: [{ name: 'router', typed_config: { '@type': t('envoy.extensions.filters.http.router.v3.Router') } }],
            },
          },
        ],
        transport_socket: tls(
          'Downstream',
          { tls_certificate_provider_instance: provider('default'), validation_context: { ca_certificate_provider_instance: provider('ROOTCA') } },
          { require_client_certificate: true },
        ),
      },
    ],
  };
}

function callSay(client: Client, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    client.makeUnaryRequest(sayPath, raw, raw, Buffer.from(text), { deadline: Date.now() + 15_000 }, (error, reply) =>
      error ? reject(error) : resolve(reply!.toString()),
    );
  });
}

describe('proxyless gRPC: DISABLE_ENVOY=true, the app speaks xDS through the agent', () => {
  let ca: CaPeer;
  let peer: Peer;
  let agent: RunningAgent;
  let statusPort: number;
  let bootstrapPath: string;
  let certsDir: string;
  let serverPort: number;

  const cleanup = suiteCleanup();

  before(async () => {
    const signer = await makeCsrSigner();
    cleanup.defer(() => signer.close());
    const dir = await tempDir(cleanup, 'proxyless-');
    const root = join(dir, 'root-cert.pem');
    const tokenFile = join(dir, 'istio-token');
    await Promise.all([
      import('node:fs/promises').then((fs) => fs.writeFile(root, signer.root)),
      import('node:fs/promises').then((fs) => fs.writeFile(tokenFile, token)),
    ]);
    // 20 s certificates: the agent renews at half-life, so the test sees a rotation.
    ca = await startCaPeer({ ca: signer.files, tls: await issueServerPair(signer, istiodName, ['localhost']), token, identity, ttlSeconds: 20 });
    cleanup.defer(() => ca.stop());
    serverPort = await freePort();
    peer = await startPeer([...clientResources(serverPort), serverListener(serverPort)]);
    cleanup.defer(() => peer.stop());
    statusPort = await freePort();
    certsDir = join(dir, 'certs');
    bootstrapPath = join(dir, 'bootstrap', 'grpc-bootstrap.json');
    agent = await startAgent({
      discoveryAddress: peer.address,
      env: {
        DISABLE_ENVOY: 'true',
        GRPC_XDS_BOOTSTRAP: bootstrapPath,
        OUTPUT_CERTS: certsDir,
        CA_ADDR: `localhost:${ca.address.split(':').at(-1)}`,
        CA_ROOT_CA: root,
        ISTIOD_SAN: istiodName,
        POD_NAMESPACE: 'default',
        SERVICE_ACCOUNT: 'app',
        SECRET_TTL: '2m',
        ISTIO_METAJSON_LABELS: JSON.stringify({ app: 'app', 'topology.istio.io/locality': 'r1.z1' }),
      },
      args: ['--statusPort', String(statusPort), '--xdsTokenFile', tokenFile],
    });
    deferStop(cleanup, agent, (result) => assert.equal(result.exitCode, 0, agent.stderr()));
  });

  it('runs no Envoy, and is ready once the bootstrap and the CA\'s certificate files are there', async () => {
    const readiness = async () => {
      const response = await fetch(`http://127.0.0.1:${statusPort}/healthz/ready`, { signal: AbortSignal.timeout(2000) });
      return { status: response.status, body: await response.text() };
    };
    await pollUntil(readiness, { what: 'readiness 200', timeoutMs: 20_000, accept: (answer) => answer.status === 200 });
    assert.deepEqual(agent.liveEnvoys(), []);
    assert.equal(agent.log.entries.some((entry) => entry.msg === 'envoy started'), false);
    const bootstrap = JSON.parse(await readFile(bootstrapPath, 'utf8'));
    assert.equal(bootstrap.node.metadata.GENERATOR, 'grpc');
    assert.deepEqual(bootstrap.node.locality, { region: 'r1', zone: 'z1' }, 'the node\'s locality, as Istio\'s gRPC bootstrap carries it');
    assert.equal(bootstrap.xds_servers[0].server_uri, `unix://${join(agent.dir, 'config', 'XDS')}`);
    assert.equal(bootstrap.certificate_providers.default.config.certificate_file, join(certsDir, 'cert-chain.pem'));
  });

  it("lets an app of another user use it, as Istio's modes do: the XDS socket 0666, OUTPUT_CERTS 0644 in 0755 directories", async () => {
    assert.equal((await stat(join(agent.dir, 'config', 'XDS'))).mode & 0o777, 0o666);
    for (const name of ['key.pem', 'cert-chain.pem', 'root-cert.pem']) assert.equal((await stat(join(certsDir, name))).mode & 0o777, 0o644, name);
    assert.equal((await stat(join(certsDir, '..data'))).mode & 0o777, 0o755);
    assert.equal((await stat(certsDir)).mode & 0o777, 0o755);
  });

  describe('a grpc-js-xds server and client configured through the relay', () => {
    const grpcCleanup = suiteCleanup();
    const seen: string[] = [];
    let client: Client;

    before(async () => {
      process.env.GRPC_XDS_BOOTSTRAP = bootstrapPath;
      xds.register();
      const server = new xds.XdsServer();
      grpcCleanup.defer(() => server.forceShutdown());
      const say = (call: ServerUnaryCall<Buffer, Buffer>, callback: sendUnaryData<Buffer>) => {
        const cert = call.getAuthContext().sslPeerCertificate;
        seen.push(cert?.subjectaltname ?? 'no client certificate');
        callback(null, Buffer.from(`pong:${call.request.toString()}`));
      };
      server.addService(
        {
          Say: {
            path: sayPath,
            requestStream: false,
            responseStream: false,
            requestSerialize: raw,
            requestDeserialize: raw,
            responseSerialize: raw,
            responseDeserialize: raw,
          },
        },
        { Say: say },
      );
      const port = serverPort;
      client = new Client('xds:///echo.test', new xds.XdsChannelCredentials(credentials.createInsecure()));
      grpcCleanup.defer(() => client.close());
      // Together: the peer (go-control-plane in ADS mode) answers a listener request only once it names every listener it serves.
      const connected = new Promise<void>((resolve, reject) => client.waitForReady(Date.now() + 20_000, (error) => (error ? reject(error) : resolve())));
      const bound = new Promise<void>((resolve, reject) =>
        server.bindAsync(`127.0.0.1:${port}`, new xds.XdsServerCredentials(ServerCredentials.createInsecure()), (error) => (error ? reject(error) : resolve())),
      );
      // gRPC's xDS client holds no ref on the event loop: the deadline does, and names what never came.
      await within(Promise.all([bound, connected]), 20_000, 'the gRPC server and client to get their config through the relay and connect').catch(
        (error: Error) => {
          throw new Error(`${error.message}; peer: ${peer.log.raw.slice(-4).join(' | ')}; agent: ${agent.log.raw.slice(-4).join(' | ')}`);
        },
      );
    });

    it('the client calls the server over mTLS with the CA\'s certificates, through the relay', async () => {
      assert.equal(await callSay(client, 'ping'), 'pong:ping');
      assert.deepEqual(seen, [`URI:${identity}`], 'the server saw the client\'s CA certificate');
      assert.ok(
        peer.log.entries.some((entry) => entry.event === 'node' && entry.metadata && (entry.metadata as { GENERATOR?: string }).GENERATOR === 'grpc'),
        'istiod is told GENERATOR=grpc',
      );
    });

    it('calls go on after a certificate rotation', async () => {
      const before = await readFile(join(certsDir, 'cert-chain.pem'), 'utf8');
      await agent.log.waitFor(
        (entry) =>
          entry.msg === 'workload certificate issued by the CA' &&
          entry.serial !== agent.log.find((first) => first.msg === 'workload certificate issued by the CA')?.serial,
        30_000,
        'the renewed certificate',
      );
      const chain = () => readFile(join(certsDir, 'cert-chain.pem'), 'utf8');
      await pollUntil(chain, {
        what: 'OUTPUT_CERTS to hold the renewed certificate',
        timeoutMs: 5000,
        intervalMs: 50,
        accept: (now) => now !== before,
        show: () => 'the first one',
      });
      const again = new Client('xds:///echo.test', new xds.XdsChannelCredentials(credentials.createInsecure()));
      try {
        assert.equal(await within(callSay(again, 'after rotation'), 15_000, 'a call after the rotation'), 'pong:after rotation');
      } finally {
        again.close();
      }
    });
  });
});
