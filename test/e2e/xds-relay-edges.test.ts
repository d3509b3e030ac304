import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { status } from '@grpc/grpc-js';
import { AdsTestClient, sotwRequest } from '../support/ads-client.ts';
import { makeCa, sidecarFiles, writeSecretVolume, writeTestCerts, type TestCa } from '../support/certs.ts';
import { suiteCleanup, tempDir } from '../support/cleanup.ts';
import { issueServerPair, makeCsrSigner } from '../support/csr-signer.ts';
import { startPeer, type Peer } from '../support/peer.ts';
import { freePort } from '../support/ports.ts';
import { plaintextUpstream, startRelay } from '../support/relay.ts';
import { edsCluster } from '../support/resources.ts';

const clusterType = 'type.googleapis.com/envoy.config.cluster.v3.Cluster';

const address = (peer: Peer) => ({ host: '127.0.0.1', port: peer.port });

describe('xDS relay edges (in-process relay, real peer)', () => {
  const cleanup = suiteCleanup();
  let dir: string;
  let peer: Peer;

  before(async () => {
    dir = await tempDir(cleanup, 'xds-edges-');
    peer = await startPeer([edsCluster('c1')]);
    cleanup.defer(() => peer.stop());
  });

  it('records the ACK, then the NACK with its text, per type', async () => {
    const { relay, registry, target } = await startRelay(dir, plaintextUpstream(peer.port, dir));
    const client = new AdsTestClient(target);
    try {
      client.send(sotwRequest({ typeUrl: clusterType, nodeId: 'test~1.2.3.4~x~y' }));
      const response = await client.waitForResponses(1);
      assert.equal(response.resources, 1);
      await peer.log.waitFor((entry) => entry.event === 'request' && entry.nonce === response.nonce && !entry.error, 10_000, 'the ACK at the peer');
      assert.deepEqual(relay.debug().types[clusterType]?.ack?.version, response.version);
      client.send(sotwRequest({ typeUrl: clusterType, version: response.version, nonce: response.nonce, error: 'boom: bad cluster' }));
      await peer.log.waitFor((entry) => entry.event === 'request' && entry.error === 'boom: bad cluster', 10_000, 'the NACK at the peer');
      const type = relay.debug().types[clusterType]!;
      assert.equal(type.nack?.error, 'boom: bad cluster');
      assert.equal(type.nacks, 1);
      assert.equal(type.responses, 1);
      assert.match(await registry.metrics(), /istio_agent_xds_proxy_nacks_total\{type="envoy.config.cluster.v3.Cluster"\} 1/);
      assert.match(await registry.metrics(), /^istio_agent_xds_proxy_upstreams_connected 1$/m);
    } finally {
      client.close();
      await relay.stop();
    }
    assert.match(await registry.metrics(), /^istio_agent_xds_proxy_upstreams_connected 0$/m);
  });

  it('ends a stream that sends garbage, logs why, and keeps serving others', async () => {
    const { relay, target } = await startRelay(dir, plaintextUpstream(peer.port, dir));
    const bad = new AdsTestClient(target);
    const good = new AdsTestClient(target);
    try {
      bad.send(Buffer.from([0x0a, 0xff, 0xff, 0x01]));
      const error = await bad.ended;
      assert.equal(error?.code, status.INVALID_ARGUMENT);
      assert.match(String(error?.details), /malformed request from Envoy/);
      good.send(sotwRequest({ typeUrl: clusterType, nodeId: 'test~1.2.3.4~x~y' }));
      await good.waitForResponses(1);
      assert.equal(relay.debug().terminations.bad_envoy_frame, 1);
    } finally {
      bad.close();
      good.close();
      await relay.stop();
    }
  });

  /** The upstream streams the peer saw open from `from` on (its log index). */
  const opened = (from: number) => peer.log.entries.slice(from).filter((entry) => entry.event === 'stream_open');

  for (const when of ['after the predial connected', 'while the predial is under way']) {
    it(`a predial is the upstream of Envoy's first stream, opened ${when}: one stream at the server`, async () => {
      const { relay, target } = await startRelay(dir, plaintextUpstream(peer.port, dir));
      const from = peer.log.entries.length;
      const client = new AdsTestClient(target);
      try {
        relay.predial('sotw');
        if (when === 'after the predial connected') await peer.log.waitFor(() => opened(from).length === 1, 10_000, 'the predial at the server');
        client.send(sotwRequest({ typeUrl: clusterType, nodeId: 'test~1.2.3.4~x~y' }));
        assert.equal((await client.waitForResponses(1)).resources, 1);
        assert.equal(opened(from).length, 1, 'one upstream stream: the predial\'s');
        assert.equal(relay.debug().upstreamFailures, 0);
      } finally {
        client.close();
        await relay.stop();
      }
    });
  }

  it('a predial no stream takes is closed when the relay stops', async () => {
    const { relay } = await startRelay(dir, plaintextUpstream(peer.port, dir));
    const from = peer.log.entries.length;
    relay.predial('sotw');
    await peer.log.waitFor(() => opened(from).length === 1, 10_000, 'the predial at the server');
    const stream = opened(from)[0]!.stream;
    await relay.stop();
    await peer.log.waitFor((entry) => entry.event === 'stream_closed' && entry.stream === stream, 10_000, 'the predial closed at the server');
  });

  it('a predial that fails is forgotten: the stream dials on its own', async () => {
    const { relay, target } = await startRelay(dir, plaintextUpstream(await freePort(), dir));
    const client = new AdsTestClient(target);
    try {
      relay.predial('sotw');
      client.send(sotwRequest({ typeUrl: clusterType, nodeId: 'n' }));
      assert.equal((await client.ended)?.code, status.UNAVAILABLE);
    } finally {
      client.close();
      await relay.stop();
    }
  });

  it('closes Envoy\'s stream with UNAVAILABLE when the discovery server is down', async () => {
    const { relay, target } = await startRelay(dir, plaintextUpstream(await freePort(), dir));
    const client = new AdsTestClient(target);
    try {
      client.send(sotwRequest({ typeUrl: clusterType, nodeId: 'n' }));
      assert.equal((await client.ended)?.code, status.UNAVAILABLE);
      assert.equal(relay.debug().upstreamFailures, 1);
      assert.equal(relay.debug().terminations.dial_failed, 1);
    } finally {
      client.close();
      await relay.stop();
    }
  });
});

describe('xDS relay with MUTUAL_TLS (real peer serving TLS)', () => {
  it('uses rotated cert files for new upstream connections', async () => {
    await using cleanup = new AsyncDisposableStack();
    const dir = await tempDir(cleanup, 'xds-mtls-');
    const [peerCerts, agentCerts] = [join(dir, 'peer'), join(dir, 'agent')];
    const [oldCa, newCa] = await Promise.all([makeCa(), makeCa()]);
    cleanup.defer(() => Promise.all([oldCa.close(), newCa.close()]).then(() => undefined));
    const issueBoth = async (ca: TestCa) => {
      await writeSecretVolume(peerCerts, sidecarFiles(ca, await ca.issue('xds-server')));
      await writeSecretVolume(agentCerts, sidecarFiles(ca, await ca.issue('agent')));
    };
    await issueBoth(oldCa);
    const files = ['--tls-cert', join(peerCerts, 'cert-chain.pem'), '--tls-key', join(peerCerts, 'key.pem'), '--tls-ca', join(peerCerts, 'root-cert.pem')];
    const peer = await startPeer([edsCluster('c1')], { args: files });
    cleanup.defer(() => peer.stop());
    // These certificates carry IP:127.0.0.1 too: the server-name test below is the one that needs the override.
    const { relay, target } = await startRelay(dir, { address: address(peer), policy: 'MUTUAL_TLS', certDir: agentCerts, serverName: 'localhost' });
    cleanup.defer(() => relay.stop());
    const first = new AdsTestClient(target);
    cleanup.defer(() => first.close());
    first.send(sotwRequest({ typeUrl: clusterType, nodeId: 'n' }));
    await first.waitForResponses(1);
    first.close();
    // A new CA on both sides: only a connection made with the new files can succeed.
    await issueBoth(newCa);
    const second = new AdsTestClient(target);
    cleanup.defer(() => second.close());
    second.send(sotwRequest({ typeUrl: clusterType, nodeId: 'n' }));
    await second.waitForResponses(1);
    second.close();
    assert.equal(peer.log.entries.filter((entry) => entry.event === 'tls_handshake').length, 2);
  });

  it('checks the server certificate against the server name (--xdsServerName), not the address dialled', async () => {
    await using cleanup = new AsyncDisposableStack();
    const dir = await tempDir(cleanup, 'xds-server-name-');
    // One CA and one leaf naming only DNS:istiod.test (no IP SAN), used by both sides.
    await writeTestCerts(dir, 'istiod.test');
    const files = ['--tls-cert', join(dir, 'cert-chain.pem'), '--tls-key', join(dir, 'key.pem'), '--tls-ca', join(dir, 'root-cert.pem')];
    const peer = await startPeer([edsCluster('c1')], { args: files });
    cleanup.defer(() => peer.stop());
    const dial = async (serverName?: string) => {
      // Both relays dial the same port, so each gets its own socket dir.
      const socketDir = join(dir, serverName ?? 'none');
      await mkdir(socketDir);
      const { relay, target } = await startRelay(socketDir, { address: address(peer), policy: 'MUTUAL_TLS', certDir: dir, serverName });
      cleanup.defer(() => relay.stop());
      const client = new AdsTestClient(target);
      cleanup.defer(() => client.close());
      client.send(sotwRequest({ typeUrl: clusterType, nodeId: 'n' }));
      return { relay, client };
    };
    const named = await dial('istiod.test');
    assert.equal((await named.client.waitForResponses(1)).resources, 1);
    const unnamed = await dial();
    assert.equal((await unnamed.client.ended)?.code, status.UNAVAILABLE, '127.0.0.1 is not in the certificate');
    assert.equal(unnamed.relay.debug().upstreamFailures, 1);
  });
});

describe('xDS relay predial over a slow link (TLS peer, the handshake held back)', () => {
  it('Envoy\'s first stream, opened while the predial\'s handshake is under way, takes that connection: one handshake, one stream', async () => {
    await using cleanup = new AsyncDisposableStack();
    const dir = await tempDir(cleanup, 'xds-predial-');
    const signer = await makeCsrSigner();
    cleanup.defer(() => signer.close());
    const tls = await issueServerPair(signer, 'istiod.istio-system.svc');
    const root = join(dir, 'root-cert.pem');
    await writeFile(root, signer.root);
    const peer = await startPeer([edsCluster('c1')], { args: ['--tls-cert', tls.cert, '--tls-key', tls.key] });
    cleanup.defer(() => peer.stop());
    // Bytes towards the peer wait 300 ms before they are sent on: the dial is under way for at least that long.
    const link = await slowLink(peer.port, 300);
    cleanup.defer(() => link.close());
    const { relay, target } = await startRelay(dir, {
      address: { host: '127.0.0.1', port: link.port },
      policy: 'TLS',
      certDir: dir,
      rootCaFile: root,
      serverName: 'istiod.istio-system.svc',
    });
    cleanup.defer(() => relay.stop());
    relay.predial('sotw');
    const client = new AdsTestClient(target);
    cleanup.defer(() => client.close());
    client.send(sotwRequest({ typeUrl: clusterType, nodeId: 'test~1.2.3.4~x~y' }));
    assert.equal((await client.waitForResponses(1)).resources, 1);
    assert.equal(link.connections(), 1, 'one connection reached the peer');
    assert.equal(peer.log.entries.filter((entry) => entry.event === 'tls_handshake').length, 1);
    assert.equal(peer.log.entries.filter((entry) => entry.event === 'stream_open').length, 1);
  });
});

/** A TCP relay to `port` on loopback that holds every chunk towards it for `delayMs`; counts its connections. */
async function slowLink(port: number, delayMs: number) {
  let count = 0;
  const sockets = new Set<Socket>();
  const server = createServer((inbound) => {
    count++;
    const outbound = connect(port, '127.0.0.1');
    for (const socket of [inbound, outbound]) {
      sockets.add(socket);
      socket.on('error', () => undefined);
      socket.on('close', () => (inbound.destroy(), outbound.destroy()));
    }
    inbound.on('data', (chunk) => void setTimeout(() => outbound.write(chunk), delayMs));
    outbound.pipe(inbound);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    connections: () => count,
    close: () => new Promise<void>((resolve) => (sockets.forEach((socket) => socket.destroy()), server.close(() => resolve()))),
  };
}
