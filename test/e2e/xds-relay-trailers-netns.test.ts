/**
 * A discovery server that ends the call with trailers and no RST_STREAM, in
 * a pod (issue 44): HTTP/2 allows it, node:http2's own server never does it.
 * The pod dials istiod's name over TLS to a front on the bridge that serves
 * istiod's certificate: until the agent has ended Envoy's stream, the front
 * passes each connection to a scripted h2c server (behind a relay that drops
 * its RST_STREAM frames) which ends the first call with an OK status; after,
 * to the mesh's discovery server. The agent must end Envoy's stream on the
 * server's END_STREAM, Envoy reopens, and the pod gets its config and is ready.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { createSecureContext, TLSSocket } from 'node:tls';
import { byName, makePodNamespace, podSkipReason, startMesh, startPodAgent, untilPodReady, type Mesh } from '../support/pods.ts';
import { startTrailersEndingServer } from '../support/scripted-upstream.ts';

const skip = await podSkipReason();

/** The TLS front on the bridge: each new connection to `target()` (TLS ended here for the scripted server, passed through to the peer). */
async function startFront(mesh: Mesh, target: () => { port: number; endTls: boolean }) {
  const context = createSecureContext({ cert: readFileSync(mesh.tls.cert), key: readFileSync(mesh.tls.key) });
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const to = target();
    const near: Socket = to.endTls ? new TLSSocket(client, { isServer: true, secureContext: context, ALPNProtocols: ['h2'] }) : client;
    const far = connect(to.port, to.endTls ? '127.0.0.1' : mesh.hostIp);
    for (const socket of [client, near, far]) (sockets.add(socket), socket.on('error', () => undefined));
    near.pipe(far).pipe(near);
    near.on('close', () => far.destroy());
    far.on('close', () => near.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, mesh.hostIp, resolve));
  return {
    address: `${mesh.hostIp}:${(server.address() as { port: number }).port}`,
    dropAll: () => sockets.forEach((socket) => socket.destroy()),
    close: () => new Promise<void>((resolve) => (sockets.forEach((socket) => socket.destroy()), server.close(() => resolve()))),
  };
}

describe('a discovery server that ends the call with trailers and no RST_STREAM (a pod)', { skip, timeout: 240_000 }, () => {
  let mesh: Mesh;
  before(async () => (mesh = await startMesh()));
  after(() => mesh?.close());

  it("Envoy's stream is ended and reopened, and the pod gets its config and is ready", async () => {
    await using cleanup = new AsyncDisposableStack();
    const dropper = await startTrailersEndingServer(cleanup);
    let scripted = true;
    const peerPort = Number(mesh.peer.address.slice(mesh.peer.address.lastIndexOf(':') + 1));
    const front = await startFront(mesh, () => (scripted ? { port: dropper.port, endTls: true } : { port: peerPort, endTls: false }));
    cleanup.defer(() => front.close());

    const netns = await makePodNamespace(mesh, 0);
    cleanup.defer(() => netns.remove());
    const pod = await startPodAgent(mesh, netns, 0, { proxyConfig: { discoveryAddress: byName(front.address) } });
    cleanup.defer(() => pod.stop());
    const ended = await pod.log.waitFor((entry) => entry.msg === 'xDS stream ended', 60_000, "the agent to end Envoy's first stream");
    assert.equal(ended.reason, 'upstream_closed');
    assert.match(String(ended.details), /discovery server ended the stream: OK/);
    // From now on the pod reaches the mesh's discovery server; connections to the scripted one are dropped.
    scripted = false;
    front.dropAll();
    await untilPodReady(pod, 120_000);
    assert.ok(pod.log.entries.filter((entry) => entry.msg === 'Envoy opened an xDS stream').length >= 2, 'Envoy opened a new stream');
    assert.equal(pod.exitCode(), undefined, pod.stderr());
  });
});
