// The ECDS test pieces the Wasm e2e tests share: a listener with Wasm filter slots, istiod's
// WasmPlugin resource, and a poll of the listener's answer.

export const t = (name: string) => `type.googleapis.com/${name}`;
export const filterName = 'extensions.istio.io/wasmplugin/default.headers';

/** A listener answering 200 itself, with the Wasm filter slot filled over ECDS when `withFilter` (or one slot per name of `names`). */
export function listener(port: number, withFilter: boolean, names = [filterName]): unknown {
  const wasmSlot = (name: string) => ({
    name,
    config_discovery: {
      config_source: { ads: {}, resource_api_version: 'V3' },
      type_urls: [t('envoy.extensions.filters.http.wasm.v3.Wasm'), t('envoy.extensions.filters.http.rbac.v3.RBAC')],
    },
  });
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
                  { name: 'all', domains: ['*'], routes: [{ match: { prefix: '/' }, direct_response: { status: 200, body: { inline_string: 'app' } } }] },
                ],
              },
              http_filters: [
                ...(withFilter ? names.map(wasmSlot) : []),
                { name: 'envoy.filters.http.router', typed_config: { '@type': t('envoy.extensions.filters.http.router.v3.Router') } },
              ],
            },
          },
        ],
      },
    ],
  };
}

/** The ECDS resource istiod sends for a WasmPlugin: remote code, cluster `_`, the agent's ISTIO_META_* variables. */
export function wasmPlugin(options: { uri: string; sha256?: string; failOpen?: boolean; name?: string }): unknown {
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
export async function until(port: number, ok: (status: number, header: string | null) => boolean, timeoutMs = 20_000): Promise<number> {
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

export const withPlugin = (status: number, header: string | null) => status === 200 && header === 'loaded';
