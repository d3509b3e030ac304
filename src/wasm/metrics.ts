import { Counter, Gauge, Histogram, type Registry } from '../metrics/index.ts';

/**
 * Istio's Wasm metrics (`pkg/wasm/monitoring.go`), in the agent's istio_agent_ namespace; Istio's exporter adds no `_total` to counters
 * (WithoutCounterSuffixes).
 */
export function registerWasmMetrics(registry: Registry, cacheEntries: () => number) {
  const registers = [registry];
  return {
    cacheEntries: new Gauge({
      name: 'istio_agent_wasm_cache_entries',
      help: 'number of Wasm remote fetch cache entries.',
      registers,
      collect() {
        this.set(cacheEntries());
      },
    }),
    cacheLookups: new Counter({
      name: 'istio_agent_wasm_cache_lookup_count',
      help: 'number of Wasm remote fetch cache lookups.',
      labelNames: ['hit'] as const,
      registers,
    }),
    remoteFetches: new Counter({
      name: 'istio_agent_wasm_remote_fetch_count',
      help: 'number of Wasm remote fetches and results, including success, download failure, and checksum mismatch.',
      labelNames: ['result'] as const,
      registers,
    }),
    conversions: new Counter({
      name: 'istio_agent_wasm_config_conversion_count',
      help: 'number of Wasm config conversions and results, including success, no remote load, marshal failure, remote fetch failure, miss remote fetch hint.',
      labelNames: ['result'] as const,
      registers,
    }),
    conversionMs: new Histogram({
      name: 'istio_agent_wasm_config_conversion_duration',
      help: 'Total time in milliseconds istio-agent spends on converting remote load in Wasm config.',
      buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384],
      registers,
    }),
  };
}

export type WasmMetrics = ReturnType<typeof registerWasmMetrics>;

/** Istio's result labels. */
export const fetchResult = { success: 'success', downloadFailure: 'download_failure', checksumMismatch: 'checksum_mismatched' } as const;
export const conversionResult = {
  success: 'success',
  noRemoteLoad: 'no_remote_load',
  fetchFailure: 'fetch_failure',
  unmarshalFailure: 'unmarshal_failure',
} as const;
