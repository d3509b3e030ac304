import { makeCa, sidecarFiles, writeSecretVolume, type KeyPair, type TestCa } from './certs.ts';
import { tempDir } from './cleanup.ts';
import { inboundMtlsListener } from './istio-resources.ts';
import type { Peer } from './peer.ts';
import { edsCluster, endpoints, routeConfig } from './resources.ts';
import { startRig, type Rig } from './rig.ts';
import type { Upstream } from './upstream.ts';

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

export interface SdsRig extends Rig {
  ca: TestCa;
  certDir: string;
  peer: Peer;
  upstream: Upstream;
  rotate(): Promise<KeyPair>;
}

/** CA, cert dir (a secret volume), upstream, peer serving SDS-reading config, agent with a status port. */
export async function startSdsRig(agentArgs: string[] = []): Promise<SdsRig> {
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
  const rig = await startRig(undo, {
    upstreamBody: 'hello over sds',
    discovery: { resources: (ports) => sdsHttpsService({ listenerPort: ports.listenerPort, upstreamPort: ports.upstreamPort }) },
    agent: { args: ['--certDir', certDir, '--certDebounce', '100ms', ...agentArgs] },
  });
  return { ...rig, peer: rig.peer!, upstream: rig.upstream!, ca, certDir, rotate };
}
