import { startAgent, type RunningAgent } from '../support/agent.ts';
import { makeCa, sidecarFiles, writeSecretVolume, type KeyPair, type TestCa } from '../support/certs.ts';
import { tempDir } from '../support/cleanup.ts';
import { inboundMtlsListener } from '../support/istio-resources.ts';
import { startPeer, type Peer } from '../support/peer.ts';
import { freePort } from '../support/ports.ts';
import { edsCluster, endpoints, routeConfig } from '../support/resources.ts';
import { startUpstream, type Upstream } from '../support/upstream.ts';

/**
 * An HTTPS listener whose certificate Envoy reads over SDS (`default`), as
 * istiod configures it. No ROOTCA here: with a validation context Envoy asks
 * every client for a certificate, and the load tools present none; the mesh
 * test covers ROOTCA on both ends.
 */
export function sdsHttpsService(options: { listenerPort: number; upstreamPort: number }): unknown[] {
  const listener = inboundMtlsListener({ name: 'https_sds', port: options.listenerPort, routeName: 'local_route', requireClientCertificate: false }) as {
    filter_chains: Array<{ transport_socket: { typed_config: { common_tls_context: Record<string, unknown> } } }>;
  };
  delete listener.filter_chains[0]!.transport_socket.typed_config.common_tls_context.combined_validation_context;
  return [
    listener,
    routeConfig('local_route', [{ prefix: '/', cluster: 'upstream' }]),
    edsCluster('upstream'),
    endpoints('upstream', options.upstreamPort),
  ];
}

export interface SdsRig {
  ca: TestCa;
  certDir: string;
  listenerPort: number;
  statusPort: number;
  peer: Peer;
  agent: RunningAgent;
  upstream: Upstream;
  rotate(): Promise<KeyPair>;
  close(): Promise<void>;
}

/** CA, cert dir (a secret volume), upstream, peer serving SDS-reading config, agent with a status port. */
export async function startSdsRig(agentArgs: string[] = []): Promise<SdsRig> {
  // Undone in reverse when a later step fails, so a failed start leaks nothing.
  await using undo = new AsyncDisposableStack();
  const ca = await makeCa();
  undo.defer(() => ca.close());
  const certDir = await tempDir(undo, 'sds-certs-');
  const rotate = async () => {
    const pair = await ca.issue('localhost', 'spiffe://cluster.local/ns/default/sa/app');
    await writeSecretVolume(certDir, sidecarFiles(ca, pair));
    return pair;
  };
  await rotate();
  const upstream = await startUpstream('hello over sds');
  undo.defer(() => upstream.close());
  const [listenerPort, statusPort] = [await freePort(), await freePort()];
  const peer = await startPeer(sdsHttpsService({ listenerPort, upstreamPort: upstream.port }));
  undo.defer(() => peer.stop());
  const agent = await startAgent({
    discoveryAddress: peer.address,
    args: ['--certDir', certDir, '--certDebounce', '100ms', '--statusPort', String(statusPort), ...agentArgs],
  });
  undo.defer(async () => {
    await agent.stop('SIGTERM');
  });
  const started = undo.move();
  return { ca, certDir, listenerPort, statusPort, peer, agent, upstream, rotate, close: () => started.disposeAsync() };
}
