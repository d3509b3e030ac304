/** What the module cache is asked for, and what a fetcher hands back. */
export type PullPolicy = 'unspecified' | 'IfNotPresent' | 'Always';

export interface ModuleRequest {
  url: string;
  /** Hex sha256 the plugin names (for OCI, of the manifest); empty: trust what comes. */
  checksum: string;
  /** The ECDS resource the module is for, and its version (ISTIO_META_WASM_PLUGIN_RESOURCE_VERSION). */
  resourceName: string;
  resourceVersion: string;
  pullPolicy: PullPolicy;
  pullSecret?: string;
  /** The whole fetch, retries included (the plugin's http_uri timeout). */
  timeoutMs: number;
}

/** What a fetcher found at a URL: its digest first, the module bytes only if still wanted. */
export interface Fetched {
  digest: string;
  module(): Promise<Buffer>;
}
