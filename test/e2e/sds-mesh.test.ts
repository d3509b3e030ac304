import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { startAgent, type RunningAgent } from '../support/agent.ts';
import { makeCa, sidecarFiles, writeSecretVolume, type TestCa } from '../support/certs.ts';
import { deferStop, suiteCleanup, tempDir, type Cleanup } from '../support/cleanup.ts';
import { spiffeId } from '../support/istio-resources.ts';
import { startPeer, type Peer } from '../support/peer.ts';
import { freePort } from '../support/ports.ts';
import { epochLive } from '../support/tls-rig.ts';
import { outboundTo, parseXfcc, sidecarInbound, startEchoApp, type EchoApp } from '../support/mesh-apps.ts';

interface Proxy {
  certDir: string;
  peer: Peer;
  agent: RunningAgent;
}

/**
 * One proxy of the mesh: its own cert dir (identity `sa`), its own peer serving
 * its istiod-shaped config, its own agent; each undone with `cleanup`.
 */
async function startProxy(cleanup: Cleanup, ca: TestCa, type: 'sidecar' | 'router', serviceAccount: string, resources: unknown[]): Promise<Proxy> {
  const certDir = await tempDir(cleanup, `mesh-${serviceAccount}-`);
  await writeSecretVolume(certDir, sidecarFiles(ca, await ca.issue(serviceAccount, spiffeId(serviceAccount))));
  const peer = await startPeer(resources);
  cleanup.defer(() => peer.stop());
  const agent = await startAgent({ type, discoveryAddress: peer.address, args: ['--certDir', certDir, '--certDebounce', '100ms'] });
  deferStop(cleanup, agent);
  return { certDir, peer, agent };
}

/** A GET on a fresh connection; the echo app's JSON, or the failure. */
async function call(port: number): Promise<{ app?: string; xfcc?: string | null; error?: string }> {
  try {
    const response = await fetch(`http://127.0.0.1:${port}/`, { headers: { connection: 'close' }, signal: AbortSignal.timeout(5000) });
    const text = await response.text();
    return response.status === 200 ? (JSON.parse(text) as { app: string; xfcc: string | null }) : { error: `HTTP ${response.status}: ${text}` };
  } catch (error) {
    return { error: (error as Error).message };
  }
}

async function callUntil(port: number, predicate: (result: Awaited<ReturnType<typeof call>>) => boolean, what: string) {
  let last: Awaited<ReturnType<typeof call>> = {};
  for (let i = 0; i < 150; i++) {
    last = await call(port);
    if (predicate(last)) return last;
    await sleep(100);
  }
  throw new Error(`${what}; last answer: ${JSON.stringify(last)}`);
}

const serialOf = (pem: string | undefined) => (pem ? BigInt(`0x${new X509Certificate(pem).serialNumber}`).toString(16).toUpperCase() : undefined);

describe('two sidecars and a router, certificates over SDS', { timeout: 120_000 }, () => {
  const cleanup = suiteCleanup();
  let ca: TestCa;
  const proxies: Proxy[] = [];
  let [aIn, bIn, aOut, routerIn] = [0, 0, 0, 0];

  before(async () => {
    ca = await makeCa();
    cleanup.defer(() => ca.close());
    const apps: EchoApp[] = [];
    for (const name of ['a', 'b']) {
      const app = await startEchoApp(name);
      cleanup.defer(() => app.close());
      apps.push(app);
    }
    [aIn, bIn, aOut, routerIn] = [await freePort(), await freePort(), await freePort(), await freePort()];
    proxies.push(
      await startProxy(cleanup, ca, 'sidecar', 'a', [
        ...sidecarInbound({ port: aIn, appPort: apps[0]!.port, name: 'a' }),
        ...outboundTo({ listenerPort: aOut, name: 'a', target: { port: bIn, serviceAccount: 'b' } }),
      ]),
    );
    proxies.push(await startProxy(cleanup, ca, 'sidecar', 'b', sidecarInbound({ port: bIn, appPort: apps[1]!.port, name: 'b' })));
    proxies.push(
      await startProxy(cleanup, ca, 'router', 'router', outboundTo({ listenerPort: routerIn, name: 'router', target: { port: aIn, serviceAccount: 'a' } })),
    );
    await Promise.all(proxies.map((proxy) => epochLive(proxy.agent, 0)));
  });

  it('router → sidecar goes over mTLS', async () => {
    const viaRouter = await callUntil(routerIn, (result) => result.app === 'a', "the router never reached sidecar a's app");
    assert.equal(parseXfcc(viaRouter.xfcc ?? null).uri, spiffeId('router'), "a's Envoy saw the router's SPIFFE identity: mTLS");
  });

  it('sidecar → sidecar goes over mTLS, and a sidecar\'s inbound port refuses plaintext', async () => {
    const aToB = await callUntil(aOut, (result) => result.app === 'b', "sidecar a never reached sidecar b's app");
    assert.equal(parseXfcc(aToB.xfcc ?? null).uri, spiffeId('a'), "b's Envoy saw a's SPIFFE identity: mTLS");
    assert.match((await call(bIn)).error ?? '', /.+/, "b's inbound port refuses plaintext");
  });

  it('a rotated identity is seen by the peer without a restart', async () => {
    const rotated = await ca.issue('a', spiffeId('a'));
    await writeSecretVolume(proxies[0]!.certDir, sidecarFiles(ca, rotated));
    await callUntil(aOut, (result) => serialOf(parseXfcc(result.xfcc ?? null).cert) === rotated.serial, "b never saw a's new certificate");
    await callUntil(routerIn, (result) => result.app === 'a', 'the router lost sidecar a after the rotation');
    for (const proxy of proxies)
      assert.deepEqual(
        proxy.agent.log.entries.filter((entry) => entry.msg === 'envoy started').map((entry) => entry.epoch),
        [0],
        'no hot restart anywhere',
      );
  });
});
