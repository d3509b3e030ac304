import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { startOciRegistry, type OciRegistry } from '../peers/oci-registry/registry.ts';
import { startAgent } from '../support/agent.ts';
import { suiteCleanup, tempDir } from '../support/cleanup.ts';
import { startPeer, type Peer, type PeerEvent } from '../support/peer.ts';
import { freePort } from '../support/ports.ts';
import { headerPluginWasm } from '../support/wasm-plugin.ts';
import { filterName, listener, t, until, wasmPlugin, withPlugin } from '../support/wasm-resources.ts';

const ecdsType = t('envoy.config.core.v3.TypedExtensionConfig');

/** A Wasm filter whose VM has no code at all: neither the agent nor Envoy can use it. */
function codelessPlugin(): unknown {
  return {
    '@type': ecdsType,
    name: filterName,
    typed_config: { '@type': t('envoy.extensions.filters.http.wasm.v3.Wasm'), config: { name: 'headers', vm_config: { runtime: 'envoy.wasm.runtime.v8' } } },
  };
}

const ecds = (entry: PeerEvent) => entry.typeUrl === ecdsType;
const responseNonces = (peer: Peer) => new Set(peer.log.entries.filter((entry) => entry.event === 'response' && ecds(entry)).map((entry) => entry.nonce));

for (const mode of ['sotw', 'delta'] as const) {
  describe(`a malformed ECDS response is NACKed upstream by the agent, real Envoy and go-control-plane (${mode})`, () => {
    const cleanup = suiteCleanup();
    let registry: OciRegistry;
    let peer: Peer;
    let port: number;

    before(async () => {
      registry = await startOciRegistry({ images: [{ repository: 'wasm/headers', tag: 'v1', module: await headerPluginWasm() }] });
      cleanup.defer(() => registry.close());
      port = await freePort();
      peer = await startPeer([listener(port, false)]);
      cleanup.defer(() => peer.stop());
    });

    it('NACKs it with an error detail, Envoy keeps its one stream, and the next good response is accepted', async () => {
      const agent = await startAgent({
        discoveryAddress: peer.address,
        args: mode === 'delta' ? ['--deltaXds'] : ['--deltaXds=false'],
        env: { WASM_CACHE_DIR: await tempDir(cleanup, 'wasm-cache-') },
      });
      try {
        await until(port, (status) => status === 200);
        await peer.setResources([listener(port, true), codelessPlugin()]);
        const nack = await peer.log.waitFor(
          (entry) => entry.event === 'request' && ecds(entry) && Boolean(entry.error) && responseNonces(peer).has(entry.nonce),
          15_000,
          'the ECDS NACK',
        );
        assert.match(String(nack.error), /neither remote nor local code/);
        // Envoy would reset its stream every ~200 ms on a response it cannot read: watch 1.5 s of that.
        await new Promise((resolve) => setTimeout(resolve, 1500));
        const streams = peer.log.entries.filter((entry) => entry.event === 'stream_open');
        assert.equal(streams.length, 1, 'one stream from the agent, never reopened');
        assert.equal(peer.log.entries.filter((entry) => entry.event === 'request' && ecds(entry) && entry.error).length, 1, 'one NACK, not a NACK loop');
        const digest = registry.manifestDigest('wasm/headers', 'v1');
        await peer.setResources([listener(port, true), wasmPlugin({ uri: `oci://${registry.host}/wasm/headers:v1`, sha256: digest })]);
        await until(port, withPlugin);
        const ack = await peer.log.waitFor(
          (entry) => entry.event === 'request' && ecds(entry) && !entry.error && entry.nonce !== nack.nonce && responseNonces(peer).has(entry.nonce),
          15_000,
          'the ECDS ACK',
        );
        assert.ok(ack.nonce);
        assert.equal(peer.log.entries.filter((entry) => entry.event === 'stream_open').length, 1, 'still the one stream');
        assert.ok(agent.log.entries.some((entry) => entry.msg === 'ECDS response rejected by the agent (NACK)'));
      } finally {
        const result = await agent.stop('SIGTERM');
        assert.equal(result.exitCode, 0, agent.stderr());
      }
    });
  });
}
