import assert from 'node:assert/strict';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { Client, credentials, Server, ServerCredentials, type sendUnaryData, type ServerUnaryCall } from '@grpc/grpc-js';
import * as xds from '@grpc/grpc-js-xds';
import { startAgent, type RunningAgent } from '../support/agent.ts';
import { deferStop, suiteCleanup } from '../support/cleanup.ts';
import { startPeer, type Peer } from '../support/peer.ts';
import { edsCluster, endpoints, routeConfig } from '../support/resources.ts';

/** gRPC's xDS client drops endpoints without a weighted locality; Envoy does not care. */
const localEndpoints = (cluster: string, port: number) => {
  const assignment = endpoints(cluster, port) as { endpoints: object[] };
  return { ...assignment, endpoints: assignment.endpoints.map((group) => ({ ...group, locality: { region: 'local' }, load_balancing_weight: 1 })) };
};

const t = (name: string) => `type.googleapis.com/${name}`;
const identity = (message: Buffer) => message;
const sayPath = '/test.Echo/Say';

/** What a proxyless gRPC client asks for: an API listener named like the target. */
function apiListener(name: string, routeName: string): unknown {
  return {
    '@type': t('envoy.config.listener.v3.Listener'),
    name,
    api_listener: {
      api_listener: {
        '@type': t('envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager'),
        rds: { route_config_name: routeName, config_source: { ads: {}, resource_api_version: 'V3' } },
        http_filters: [{ name: 'router', typed_config: { '@type': t('envoy.extensions.filters.http.router.v3.Router') } }],
      },
    },
  };
}

/** A grpc-js backend answering `pong:<request>`. */
async function startBackend(): Promise<{ port: number; server: Server }> {
  const server = new Server();
  const say = (call: ServerUnaryCall<Buffer, Buffer>, callback: sendUnaryData<Buffer>) => callback(null, Buffer.from(`pong:${call.request.toString()}`));
  server.addService(
    {
      Say: {
        path: sayPath,
        requestStream: false,
        responseStream: false,
        requestSerialize: identity,
        requestDeserialize: identity,
        responseSerialize: identity,
        responseDeserialize: identity,
      },
    },
    { Say: say },
  );
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (error, bound) => (error ? reject(error) : resolve(bound))),
  );
  return { port, server };
}

function callSay(client: Client, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    client.makeUnaryRequest(sayPath, identity, identity, Buffer.from(text), { deadline: Date.now() + 15_000 }, (error, reply) =>
      error ? reject(error) : resolve(reply!.toString()),
    );
  });
}

describe('a proxyless gRPC client (@grpc/grpc-js-xds) resolves through the relay', () => {
  let backend: { port: number; server: Server };
  let peer: Peer;
  let agent: RunningAgent;

  const cleanup = suiteCleanup();

  before(async () => {
    backend = await startBackend();
    cleanup.defer(() => backend.server.forceShutdown());
    peer = await startPeer([
      apiListener('echo.test', 'echo_route'),
      routeConfig('echo_route', [{ prefix: '', cluster: 'echo' }]),
      edsCluster('echo'),
      localEndpoints('echo', backend.port),
    ]);
    cleanup.defer(() => peer.stop());
    agent = await startAgent({ discoveryAddress: peer.address });
    deferStop(cleanup, agent, (result) => assert.equal(result.exitCode, 0, agent.stderr()));
    await agent.log.waitFor((entry) => entry.msg === 'xDS relay listening', 15_000, 'the relay to listen');
  });

  it('calls the backend over an xds:/// channel', async () => {
    const socket = join(agent.dir, 'config', 'XDS');
    process.env.GRPC_XDS_BOOTSTRAP_CONFIG = JSON.stringify({
      xds_servers: [{ server_uri: `unix://${socket}`, channel_creds: [{ type: 'insecure' }], server_features: ['xds_v3'] }],
      node: { id: 'sidecar~127.0.0.1~grpc-client~default.svc.cluster.local', cluster: 'grpc-client', locality: {} },
    });
    xds.register();
    const client = new Client('xds:///echo.test', credentials.createInsecure());
    try {
      assert.equal(await callSay(client, 'ping'), 'pong:ping');
      const nodes = peer.log.entries.filter((entry) => entry.event === 'node').map((entry) => entry.node);
      assert.ok(
        nodes.includes('sidecar~127.0.0.1~grpc-client~default.svc.cluster.local'),
        `peer saw the gRPC client's node through the relay: ${nodes.join(', ')}`,
      );
    } finally {
      client.close();
    }
  });
});
