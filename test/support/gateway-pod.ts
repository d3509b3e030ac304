/**
 * A gateway pod as Istio runs one (KUBE.md, "Other shapes"): a network
 * namespace with the chart's sysctl net.ipv4.ip_unprivileged_port_start=0,
 * the agent as uid 1337 running `proxy router` with only what the template
 * renders, istiod (the xDS and CA peers behind one TLS front) found by its
 * name, and Envoy at /usr/local/bin/envoy. istiod's part is played by the
 * peers: a plaintext HTTP listener on 0.0.0.0:80 whose route goes over mesh
 * mTLS to `b`, a server on the host that requires the gateway's certificate.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:https';
import type { TLSSocket } from 'node:tls';
import { chmod, mkdir, readFile, realpath, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { execa } from 'execa';
import { startAgent, type RunningAgent } from './agent.ts';
import { startCaPeer, type CaPeer } from './ca-peer.ts';
import { deferStop, type Cleanup, tempDir } from './cleanup.ts';
import { issueServerPair, makeCsrSigner, type CsrSigner } from './csr-signer.ts';
import { meshEndpoints, outboundMtlsCluster, spiffeId } from './istio-resources.ts';
import { startIstiodFront } from './istiod-front.ts';
import { makeNetns } from './netns.ts';
import { envoyBin } from './paths.ts';
import { startPeer, type Peer } from './peer.ts';
import { httpListener, routeConfig } from './resources.ts';

export const istiodName = 'istiod.istio-system.svc';
export const gatewayUid = 1337;

export interface GatewayShape {
  /** The pod's namespace and service account, which name its identity. */
  namespace: string;
  serviceAccount: string;
  /** `proxy router` then these: the template's args with $(POD_NAMESPACE) expanded. */
  args: string[];
  /** The template's env, without the pod's IPs (added here). */
  env: (podIp: string, hostIp: string) => Record<string, string>;
  /** Leave the chart's sysctl out (to see the test fail without it). */
  noSysctl?: boolean;
}

export interface GatewayPod {
  podIp: string;
  agent: RunningAgent;
  ca: CaPeer;
  peer: Peer;
}

const token = 'projected-token-for-the-gateway';
const upstreamCluster = 'outbound|80||b.default.svc.cluster.local';

/** What istiod sends a gateway for a Gateway on port 80 and a route to b: plaintext in, mesh mTLS out. */
function gatewayResources(hostIp: string, bPort: number): unknown[] {
  const listener = httpListener('0.0.0.0_80', 80, 'http.80') as { address: { socket_address: { address: string } } };
  listener.address.socket_address.address = '0.0.0.0';
  const assignment = meshEndpoints(upstreamCluster, bPort) as { endpoints: { lb_endpoints: { endpoint: { address: { socket_address: { address: string } } } }[] }[] };
  assignment.endpoints[0]!.lb_endpoints[0]!.endpoint.address.socket_address.address = hostIp;
  return [listener, routeConfig('http.80', [{ prefix: '/', cluster: upstreamCluster }]), outboundMtlsCluster(upstreamCluster, spiffeId('b')), assignment];
}

/** b's sidecar, in short (it takes the mesh's ALPN `istio`, as an inbound listener does): mTLS with b's SPIFFE certificate, a client certificate required; answers with the caller's identity. */
async function startMeshUpstream(signer: CsrSigner, host: string): Promise<{ port: number; close(): Promise<void> }> {
  const dir = dirname(signer.files.cert);
  const [key, csr] = [join(dir, 'b.key'), join(dir, 'b.csr')];
  await execa('openssl', ['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', key, '-out', csr, '-subj', '/O=cluster.local']);
  const cert = await signer.sign(await readFile(csr, 'utf8'), { uri: spiffeId('b') });
  const server: Server = createServer(
    { key: await readFile(key), cert, ca: signer.root, requestCert: true, rejectUnauthorized: true, ALPNProtocols: ['istio', 'http/1.1'] },
    (request, response) => {
      const peer = (request.socket as TLSSocket).getPeerCertificate();
      response.setHeader('content-type', 'application/json');
      response.end(JSON.stringify({ app: 'b', caller: peer.subjectaltname ?? null }));
    },
  );
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return {
    port: (server.address() as { port: number }).port,
    close: () => (server.closeAllConnections(), new Promise((resolve) => server.close(() => resolve()))),
  };
}

/** The pod's files at Istio's paths under its root (the agent's cwd), readable by uid 1337. */
async function podRoot(dir: string, root: string, hostIp: string): Promise<string> {
  await chmod(dir, 0o755);
  const files: [string, string][] = [
    ['var/run/secrets/tokens/istio-token', token],
    ['var/run/secrets/istio/root-cert.pem', root],
    ['etc/istio/pod/labels', 'istio="ingressgateway"\napp="istio-ingressgateway"\n'],
    ['hosts', `127.0.0.1 localhost\n${hostIp} ${istiodName}\n`],
  ];
  for (const [path, text] of files) {
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), text, { mode: 0o644 });
  }
  for (const emptyDir of ['etc/istio/proxy', 'var/run/secrets/workload-spiffe-uds', 'var/run/secrets/credential-uds', 'var/lib/istio/data']) {
    await mkdir(join(dir, emptyDir), { recursive: true });
    await chmod(join(dir, emptyDir), 0o777);
  }
  return join(dir, 'hosts');
}

/** In the pod's mount namespace: its /etc/hosts and Envoy where Istio's image has it; then the agent as uid 1337. */
const podMounts = 'mount --bind "$0" /etc/hosts && mount -t tmpfs -o mode=0755 tmpfs /usr/local/bin && ln -s "$1" /usr/local/bin/envoy && shift && exec "$@"';

/** The peers, the pod and its agent; everything is undone by `cleanup`. */
export async function startGatewayPod(cleanup: Cleanup, shape: GatewayShape): Promise<GatewayPod> {
  const signer = await makeCsrSigner();
  cleanup.defer(() => signer.close());
  const tls = await issueServerPair(signer, istiodName);
  const identity = `spiffe://cluster.local/ns/${shape.namespace}/sa/${shape.serviceAccount}`;
  const ca = await startCaPeer({ ca: signer.files, tls, token, identity });
  cleanup.defer(() => ca.stop());
  const netns = await makeNetns('gateway');
  cleanup.defer(() => netns.remove());
  const podIp = netns.hostIp.replace(/\d+$/, (last) => String(Number(last) + 1));
  const b = await startMeshUpstream(signer, netns.hostIp);
  cleanup.defer(() => b.close());
  const peer = await startPeer(gatewayResources(netns.hostIp, b.port), { args: ['--tls-cert', tls.cert, '--tls-key', tls.key, '--require-token', token] });
  cleanup.defer(() => peer.stop());
  const routes = [{ pathPrefix: '/istio.v1.auth.IstioCertificateService/', url: `https://${ca.address}` }];
  const front = await startIstiodFront({ host: netns.hostIp, port: 15012, tls, peerCa: signer.root, peerName: istiodName, routes, fallback: `https://${peer.address}` });
  cleanup.defer(() => front.close());
  // The chart's (and kube-gateway's) pod securityContext: uid 1337 may bind port 80 in this netns.
  if (!shape.noSysctl) await execa('ip', ['netns', 'exec', netns.name, 'sysctl', '-qw', 'net.ipv4.ip_unprivileged_port_start=0']);
  const dir = await tempDir(cleanup, 'pilot-agent-gateway-pod-');
  const hosts = await podRoot(dir, signer.root, netns.hostIp);
  const asProxy = ['setpriv', `--reuid=${gatewayUid}`, `--regid=${gatewayUid}`, '--clear-groups', '--'];
  const agent = await startAgent({
    type: 'router',
    injectedOnly: true,
    discoveryAddress: '',
    args: shape.args,
    env: shape.env(podIp, netns.hostIp),
    cwd: dir,
    dir,
    wrap: ['ip', 'netns', 'exec', netns.name, 'unshare', '--mount', '--propagation', 'private', 'sh', '-c', podMounts, hosts, await realpath(envoyBin), ...asProxy],
  });
  deferStop(cleanup, agent, (result) => assert.equal(result.exitCode, 0, agent.stderr()));
  return { podIp, agent, ca, peer };
}
