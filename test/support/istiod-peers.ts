/**
 * istiod as the project's peers play it for a pod that finds istiod by
 * Istio's defaults (istio-default-install, vm-workload-group): the CA peer
 * (checks ca-rig's token and identity) and the xDS peer, both with istiod's
 * certificate, behind one front on the pod's bridge, port 15012. And the
 * pod's mount namespace: its /etc/hosts naming istiod, Envoy where Istio's
 * image puts it.
 */
import { realpath } from 'node:fs/promises';
import { startCaPeer, type CaPeer } from './ca-peer.ts';
import { identity, token } from './ca-rig.ts';
import type { Cleanup } from './cleanup.ts';
import { issueServerPair, makeCsrSigner } from './csr-signer.ts';
import { startIstiodFront } from './istiod-front.ts';
import { envoyBin } from './paths.ts';
import { startPeer, type NameTableJson, type Peer } from './peer.ts';
import { freePort } from './ports.ts';
import { sdsHttpsService } from './sds-rig.ts';

export const istiodName = 'istiod.istio-system.svc';

/** The peers and the root their certificates chain to; all stopped by `cleanup`. */
export async function startIstiodPeers(cleanup: Cleanup, host: string, nameTable?: NameTableJson): Promise<{ root: string; ca: CaPeer; peer: Peer }> {
  const signer = await makeCsrSigner();
  cleanup.defer(() => signer.close());
  const tls = await issueServerPair(signer, istiodName);
  const ca = await startCaPeer({ ca: signer.files, tls, token, identity });
  cleanup.defer(() => ca.stop());
  const peer = await startPeer(sdsHttpsService({ listenerPort: 8443, upstreamPort: await freePort() }), {
    args: ['--tls-cert', tls.cert, '--tls-key', tls.key, '--require-token', token],
    ...(nameTable ? { nameTable } : {}),
  });
  cleanup.defer(() => peer.stop());
  const front = await startIstiodFront({
    host,
    port: 15012,
    tls,
    peerCa: signer.root,
    peerName: istiodName,
    routes: [{ pathPrefix: '/istio.v1.auth.IstioCertificateService/', url: `https://${ca.address}` }],
    fallback: `https://${peer.address}`,
  });
  cleanup.defer(() => front.close());
  return { root: signer.root, ca, peer };
}

/** In the pod's mount namespace: `hosts` as its /etc/hosts, and Envoy at /usr/local/bin/envoy. */
const podMounts = 'mount --bind "$0" /etc/hosts && mount -t tmpfs -o mode=0755 tmpfs /usr/local/bin && ln -s "$1" /usr/local/bin/envoy && shift && exec "$@"';

/** The agent's wrap: in network namespace `netns`, a mount namespace of its own (podMounts). */
export async function podMountWrap(netns: string, hosts: string): Promise<string[]> {
  return ['ip', 'netns', 'exec', netns, 'unshare', '--mount', '--propagation', 'private', 'sh', '-c', podMounts, hosts, await realpath(envoyBin)];
}
