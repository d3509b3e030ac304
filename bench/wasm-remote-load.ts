// Wasm remote load: ms from a push at the xDS peer to Envoy serving with it,
// through the agent. Three pushes per round, same agent, same run: a route
// change of the listener that holds the Wasm filter (the baseline: no ECDS),
// an ECDS push of an OCI image not seen before (the agent fetches manifest
// and blob; Envoy starts a new VM), and an ECDS push back to an image already
// cached. Each image's module answers with its own header value, so the
// figure ends when Envoy serves with that module. Median of RUNS (default 5), SotW.
// Run: .tools/bin/node bench/wasm-remote-load.ts
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { startOciRegistry } from '../test/peers/oci-registry/registry.ts';
import { startAgent } from '../test/support/agent.ts';
import { startPeer } from '../test/support/peer.ts';
import { freePort } from '../test/support/ports.ts';
import { headerPluginWasm } from '../test/support/wasm-plugin.ts';

const runs = Number(process.env.RUNS ?? 5);
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const t = (name: string) => `type.googleapis.com/${name}`;
const filterName = 'extensions.istio.io/wasmplugin/bench.headers';

/** The header plugin answering `x-wasm-plugin: <value>` (6 bytes, the length of "loaded"). */
const variant = (module: Buffer, value: string) => {
  const at = module.indexOf('loaded');
  const copy = Buffer.from(module);
  copy.write(value.padEnd(6, '-').slice(0, 6), at, 'latin1');
  return copy;
};
const headerOf = (n: number) => `v${n}`.padEnd(6, '-');

function listener(port: number, body: string, withFilter: boolean): unknown {
  const wasmSlot = {
    name: filterName,
    config_discovery: { config_source: { ads: {}, resource_api_version: 'V3' }, type_urls: [t('envoy.extensions.filters.http.wasm.v3.Wasm')] },
  };
  return {
    '@type': t('envoy.config.listener.v3.Listener'),
    name: 'listener_0',
    address: { socket_address: { address: '127.0.0.1', port_value: port } },
    filter_chains: [
      {
        filters: [
          {
            name: 'envoy.filters.network.http_connection_manager',
            typed_config: {
              '@type': t('envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager'),
              stat_prefix: 'in',
              route_config: {
                name: 'local',
                virtual_hosts: [
                  { name: 'all', domains: ['*'], routes: [{ match: { prefix: '/' }, direct_response: { status: 200, body: { inline_string: body } } }] },
                ],
              },
              http_filters: [
                ...(withFilter ? [wasmSlot] : []),
                { name: 'envoy.filters.http.router', typed_config: { '@type': t('envoy.extensions.filters.http.router.v3.Router') } },
              ],
            },
          },
        ],
      },
    ],
  };
}

function plugin(uri: string, sha256: string, version: number): unknown {
  return {
    '@type': t('envoy.config.core.v3.TypedExtensionConfig'), name: filterName,
    typed_config: { '@type': t('envoy.extensions.filters.http.wasm.v3.Wasm'), config: { name: 'headers', failure_policy: 'FAIL_CLOSED', vm_config: {
      runtime: 'envoy.wasm.runtime.v8',
      code: { remote: { http_uri: { uri, cluster: '_', timeout: '10s' }, sha256 } },
      environment_variables: { key_values: { ISTIO_META_WASM_PLUGIN_RESOURCE_VERSION: String(version) } },
    } } },
  };
}

/** ms until the listener answers with `body` and the plugin's header `header`. */
async function until(port: number, body: string, header: string, since: number): Promise<number> {
  for (;;) {
    const answer = await fetch(`http://127.0.0.1:${port}/`).then(
      async (response) => ({ text: await response.text(), header: response.headers.get('x-wasm-plugin') }),
      () => undefined,
    );
    if (answer && answer.text === body && answer.header === header) return performance.now() - since;
    if (performance.now() - since > 30_000) throw new Error(`no ${body} with header ${header} within 30 s`);
    await sleep(2);
  }
}

const module = await headerPluginWasm();
const images = Array.from({ length: runs + 1 }, (_, n) => ({ repository: 'bench/headers', tag: `v${n}`, module: variant(module, headerOf(n)) }));
const registry = await startOciRegistry({ images });
const port = await freePort();
const image = (n: number) => plugin(`oci://${registry.host}/bench/headers:v${n}`, registry.manifestDigest('bench/headers', `v${n}`), n);
const peer = await startPeer([listener(port, 'start', true), image(0)]);
const cacheDir = await mkdtemp(join(tmpdir(), 'wasm-bench-'));
const agent = await startAgent({ discoveryAddress: peer.address, env: { WASM_CACHE_DIR: cacheDir } });
const figures = { baseline: [] as number[], cold: [] as number[], cached: [] as number[] };
try {
  await until(port, 'start', headerOf(0), performance.now());
  const push = async (resources: unknown[], body: string, header: string) => {
    const since = performance.now();
    await peer.setResources(resources);
    return until(port, body, header, since);
  };
  for (let n = 1; n <= runs; n++) {
    figures.baseline.push(await push([listener(port, `route${n}`, true), image(n - 1)], `route${n}`, headerOf(n - 1)));
    figures.cold.push(await push([listener(port, `route${n}`, true), image(n)], `route${n}`, headerOf(n)));
    figures.cached.push(await push([listener(port, `route${n}`, true), image(n - 1)], `route${n}`, headerOf(n - 1)));
    await push([listener(port, `route${n}`, true), image(n)], `route${n}`, headerOf(n));
  }
  const ready = agent.log.entries.filter((entry) => entry.msg.startsWith('Wasm module ready'));
  const [b, c, w] = [median(figures.baseline), median(figures.cold), median(figures.cached)];
  console.log(
    `push to serving, median of ${runs} (ms): a route change (no ECDS) ${b.toFixed(0)}; an ECDS push of a new OCI image ${c.toFixed(0)} (${(c / b).toFixed(2)}× the baseline); of a cached image ${w.toFixed(0)} (${(w / b).toFixed(2)}×)`,
  );
  // The peer's snapshot moves as a whole, so every push re-sends ECDS too: most conversions are cache hits.
  const ms = ready.map((entry) => Number(entry.ms));
  console.log(`the agent's part, from its log: ${ready.length} ECDS conversions; module ready in at most ${Math.max(...ms)} ms, median ${median(ms)} ms`);
} finally {
  await agent.stop('SIGTERM');
  await peer.stop();
  await registry.close();
  await rm(cacheDir, { recursive: true, force: true });
}
