/** What the Prometheus listener compresses: Envoy's stats in every format a scraper may ask for. */
const compressedTypes = ['text/plain', 'application/vnd.google.protobuf', 'application/openmetrics-text', 'application/openmetrics-protobuf'];

const libraries = [
  { filter: 'envoy.filters.http.compressor.brotli', name: 'stats_brotli', type: 'envoy.extensions.compression.brotli.compressor.v3.Brotli' },
  { filter: 'envoy.filters.http.compressor.zstd', name: 'stats_zstd', type: 'envoy.extensions.compression.zstd.compressor.v3.Zstd' },
  { filter: 'envoy.filters.http.compressor.gzip', name: 'stats_gzip', type: 'envoy.extensions.compression.gzip.compressor.v3.Gzip' },
];

/**
 * Istio's compressors on the Prometheus listener (ProxyConfig
 * statsCompression, on unless false): brotli, zstd, then gzip, each used
 * when the scraper's Accept-Encoding names it. Stats pages are large and
 * compress about tenfold.
 */
export function statsCompressionFilters(enabled = true): unknown[] {
  if (!enabled) return [];
  return libraries.map((library) => ({
    name: library.filter,
    typed_config: {
      '@type': 'type.googleapis.com/envoy.extensions.filters.http.compressor.v3.Compressor',
      compressor_library: { name: library.name, typed_config: { '@type': `type.googleapis.com/${library.type}` } },
      response_direction_config: { common_config: { content_type: compressedTypes } },
    },
  }));
}
