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

const t = (name: string) => `type.googleapis.com/${name}`;
const filterName = 'extensions.istio.io/wasmplugin/default.headers';

/** A listener answering 200 itself, with the Wasm filter slot filled over ECDS when `withFilter` (or one slot per name of `names`). */
function listener(port: number, withFilter: boolean, names = [filterName]): unknown {
  const wasmSlot = (name: string) => ({ name, config_discovery: { config_source: { ads: {}, resource_api_version: 'V3' }, type_urls: [t('envoy.extensions.filters.http.wasm.v3.Wasm'), t('envoy.extensions.filters.http.rbac.v3.RBAC')] } });
  return {
    '@type': t('envoy.config.listener.v3.Listener'),
    name: 'listener_0',
    address: { socket_address: { address: '127.0.0.1', port_value: port } },
    filter_chains: [{ filters: [{ name: 'envoy.filters.network.http_connection_manager', typed_config: {
      '@type': t('envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager'),
      stat_prefix: 'in',
      route_config: { name: 'local', virtual_hosts: [{ name: 'all', domains: ['*'], routes: [{ match: { prefix: '/' }, direct_response: { status: 200, body: { inline_string: 'app' } } }] }] },
      http_filters: [...(withFilter ? names.map(wasmSlot) : []), { name: 'envoy.filters.http.router', typed_config: { '@type': t('envoy.extensions.filters.http.router.v3.Router') } }],
    } }] }],
  };
}

/** The ECDS resource istiod sends for a WasmPlugin: remote code, cluster `_`, the agent's ISTIO_META_* variables. */
function wasmPlugin(options: { uri: string; sha256?: string; failOpen?: boolean; name?: string }): unknown {
  return {
    '@type': t('envoy.config.core.v3.TypedExtensionConfig'),
    name: options.name ?? filterName,
    typed_config: {
      '@type': t('envoy.extensions.filters.http.wasm.v3.Wasm'),
      config: {
        name: 'headers',
        failure_policy: options.failOpen ? 'FAIL_OPEN' : 'FAIL_CLOSED',
        vm_config: {
          runtime: 'envoy.wasm.runtime.v8',
          code: { remote: { http_uri: { uri: options.uri, cluster: '_', timeout: '10s' }, sha256: options.sha256 ?? 'nil' } },
          environment_variables: { key_values: { ISTIO_META_WASM_IMAGE_PULL_POLICY: 'IfNotPresent', ISTIO_META_WASM_PLUGIN_RESOURCE_VERSION: '1' } },
        },
      },
    },
  };
}

/** Polls the listener until `ok` holds for its answer; the last answer in the failure. */
async function until(port: number, ok: (status: number, header: string | null) => boolean, timeoutMs = 20_000): Promise<number> {
  const started = performance.now();
  let last = '';
  while (performance.now() - started < timeoutMs) {
    const response = await fetch(`http://127.0.0.1:${port}/`).catch((error: Error) => error);
    if (!(response instanceof Error)) {
      await response.text();
      const header = response.headers.get('x-wasm-plugin');
      if (ok(response.status, header)) return performance.now() - started;
      last = `HTTP ${response.status}, x-wasm-plugin ${header}`;
    } else last = String(response.cause ?? response);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`the listener on ${port} never answered as expected; last: ${last}`);
}

const withPlugin = (status: number, header: string | null) => status === 200 && header === 'loaded';

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

    const agentFor = (env: Record<string, string> = {}) => startAgent({ discoveryAddress: peer.address, args: mode === 'delta' ? ['--deltaXds'] : ['--deltaXds=false'], env: { WASM_CACHE_DIR: cacheDir, WASM_HTTP_REQUEST_MAX_RETRIES: '2', ...env } });
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
          await peer.setResources([listener(port, true), wasmPlugin({ uri: `oci://${registry.host}/wasm/headers:v1`, sha256: 'cd'.repeat(32), failOpen: true })]);
          await until(port, (status, header) => status === 200 && header === null);
          assert.ok(agent.log.entries.some((entry) => entry.fallback === 'deny-all' && String(entry.error).includes('not ' + 'ab'.repeat(32))));
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
          await peer.setResources([listener(port, true, names), ...names.map((name) => wasmPlugin({ uri: `oci://${registry.host}/wasm/headers:v1`, sha256: digest, name }))]);
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
          assert.match(String(refusal?.error), /169\.254\.169\.254 refused: link-local/);
        } finally {
          await stopClean(agent);
        }
      });
    }
  });
}

