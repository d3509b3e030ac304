import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { startOciRegistry, type OciRegistry } from '../peers/oci-registry/registry.ts';
import { startAgent, type RunningAgent } from '../support/agent.ts';
import { suiteCleanup, tempDir } from '../support/cleanup.ts';
import { startPeer, type Peer } from '../support/peer.ts';
import { freePort } from '../support/ports.ts';
import { headerPluginWasm } from '../support/wasm-plugin.ts';
import { listener, until, wasmPlugin, withPlugin } from '../support/wasm-resources.ts';

/** The message of the error a log line carries (pino writes `{ err }` as type, message and stack). */
const errorMessage = (entry: { [key: string]: unknown } | undefined) => String((entry?.err as { message?: unknown } | undefined)?.message);

for (const mode of ['sotw', 'delta'] as const) {
  describe(`Wasm remote load through the relay, real Envoy (${mode})`, () => {
    const cleanup = suiteCleanup();
    let registry: OciRegistry;
    let peer: Peer;
    let port: number;
    let cacheDir: string;
    let digest: string;

    before(async () => {
      const module = await headerPluginWasm();
      registry = await startOciRegistry({ images: [{ repository: 'wasm/headers', tag: 'v1', module }] });
      cleanup.defer(() => registry.close());
      digest = registry.manifestDigest('wasm/headers', 'v1');
      port = await freePort();
      peer = await startPeer([listener(port, false)]);
      cleanup.defer(() => peer.stop());
      cacheDir = await tempDir(cleanup, 'wasm-cache-');
    });

    const agentFor = (env: Record<string, string> = {}) =>
      startAgent({
        discoveryAddress: peer.address,
        args: mode === 'delta' ? ['--deltaXds'] : ['--deltaXds=false'],
        env: { WASM_CACHE_DIR: cacheDir, WASM_HTTP_REQUEST_MAX_RETRIES: '2', ...env },
      });
    const stopClean = async (agent: RunningAgent) => {
      const result = await agent.stop('SIGTERM');
      assert.equal(result.exitCode, 0, agent.stderr());
    };

    it('fetches the plugin from the OCI registry, caches it, and Envoy runs it', async () => {
      const agent = await agentFor();
      try {
        await until(port, (status) => status === 200);
        const pushed = performance.now();
        await peer.setResources([listener(port, true), wasmPlugin({ uri: `oci://${registry.host}/wasm/headers:v1`, sha256: digest })]);
        await until(port, withPlugin);
        const ms = Math.round(performance.now() - pushed);
        console.log(`# ${mode}: ECDS push to Envoy serving with the Wasm filter: ${ms} ms`);
        const folders = await readdir(cacheDir);
        assert.deepEqual(await readdir(join(cacheDir, folders[0]!)), [`${digest}.wasm`]);
        assert.ok(agent.log.entries.some((entry) => entry.msg.startsWith('Wasm module ready')));
      } finally {
        await stopClean(agent);
      }
    });

    it('a restarted agent serves the plugin from its disk cache without asking the registry', async () => {
      const before = registry.requests.length;
      const agent = await agentFor();
      try {
        await until(port, withPlugin);
        assert.equal(registry.requests.length, before, 'no request reached the registry');
      } finally {
        await stopClean(agent);
      }
    });

    if (mode === 'sotw') {
      it('a wrong sha256 gives deny-all (403) for fail-close and pass-through for fail-open', async () => {
        const agent = await agentFor({ WASM_CACHE_DIR: await tempDir(cleanup, 'wasm-cache-') });
        try {
          await peer.setResources([listener(port, true), wasmPlugin({ uri: `oci://${registry.host}/wasm/headers:v1`, sha256: 'ab'.repeat(32) })]);
          await until(port, (status) => status === 403);
          await peer.setResources([
            listener(port, true),
            wasmPlugin({ uri: `oci://${registry.host}/wasm/headers:v1`, sha256: 'cd'.repeat(32), failOpen: true }),
          ]);
          await until(port, (status, header) => status === 200 && header === null);
          assert.ok(agent.log.entries.some((entry) => entry.fallback === 'deny-all' && errorMessage(entry).includes('not ' + 'ab'.repeat(32))));
        } finally {
          await stopClean(agent);
        }
      });

      it('12 fail-closed filters on one module all load it: one fetch of the blob, no filter deny-all', async () => {
        const dir = await tempDir(cleanup, 'wasm-cache-');
        const agent = await agentFor({ WASM_CACHE_DIR: dir });
        const names = Array.from({ length: 12 }, (_, index) => `extensions.istio.io/wasmplugin/default.headers-${index}`);
        const before = registry.requests.length;
        try {
          await peer.setResources([
            listener(port, true, names),
            ...names.map((name) => wasmPlugin({ uri: `oci://${registry.host}/wasm/headers:v1`, sha256: digest, name })),
          ]);
          // Each filter adds its header: twelve 'loaded' means every filter runs the module.
          await until(port, (status, header) => status === 200 && header?.split(', ').filter((value) => value === 'loaded').length === 12, 60_000);
          assert.equal(agent.log.entries.filter((entry) => entry.fallback === 'deny-all').length, 0, 'no filter fell back to deny-all');
          const blobs = registry.requests.slice(before).filter((line) => /^GET .*\/blobs\//.test(line));
          assert.equal(blobs.length, 1, blobs.join('\n'));
          const [folder] = await readdir(dir);
          assert.deepEqual(await readdir(join(dir, folder!)), [`${digest}.wasm`], 'one module, no temporary left');
        } finally {
          await stopClean(agent);
        }
      });

      it('refuses to fetch from a link-local address', async () => {
        const agent = await agentFor({ WASM_CACHE_DIR: await tempDir(cleanup, 'wasm-cache-') });
        try {
          await peer.setResources([listener(port, true), wasmPlugin({ uri: 'http://169.254.169.254/latest/plugin.wasm' })]);
          await until(port, (status) => status === 403);
          const refusal = agent.log.entries.find((entry) => entry.fallback === 'deny-all');
          assert.match(errorMessage(refusal), /169\.254\.169\.254 refused: link-local/);
        } finally {
          await stopClean(agent);
        }
      });
    }
  });
}

