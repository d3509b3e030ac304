import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { globalDownstreamMaxConnections, runtimeFlags, statsCompressionFilters, unlimitedConnections, unrenderedProxyConfig } from './runtime.ts';

describe("the bootstrap's parts from ProxyConfig, as Istio renders them", () => {
  it("runtime: Istio's static layer, with runtimeValues over it ('' removes, 'true'/'false' are booleans)", () => {
    assert.equal(runtimeFlags({})['re2.max_program_size.error_level'], '32768');
    const flags = runtimeFlags({ runtimeValues: { 're2.max_program_size.error_level': '', 'a.b': 'true', 'c.d': 'false', 'e.f': '7' } });
    assert.equal('re2.max_program_size.error_level' in flags, false);
    assert.deepEqual([flags['a.b'], flags['c.d'], flags['e.f']], [true, false, '7']);
  });

  it('the connection limit by precedence: connectionSettings, then ISTIO_META_GLOBAL_DOWNSTREAM_MAX_CONNECTIONS, then the runtime value; else none', () => {
    const runtime = { runtimeValues: { 'overload.global_downstream_max_connections': '300' } };
    const meta = { proxyMetadata: { ISTIO_META_GLOBAL_DOWNSTREAM_MAX_CONNECTIONS: '200' } };
    for (const [config, metadata, want] of [
      [{}, {}, unlimitedConnections],
      [runtime, {}, 300],
      [{ ...runtime, ...meta }, {}, 200],
      [runtime, { GLOBAL_DOWNSTREAM_MAX_CONNECTIONS: '250' }, 250],
      [{ ...runtime, ...meta, connectionSettings: { globalDownstreamConnectionLimit: 100 } }, {}, 100],
      [{ ...runtime, connectionSettings: { globalDownstreamConnectionLimit: 0 } }, {}, 300],
    ] as const) assert.equal(globalDownstreamMaxConnections(config, metadata), want, JSON.stringify(config));
  });

  it('a limit that is not a connection count is exit 2 naming where it came from', () => {
    assert.throws(() => globalDownstreamMaxConnections({ connectionSettings: { globalDownstreamConnectionLimit: -1 } }, {}), (error: Error & { exitCode: number }) => error.exitCode === 2 && /connectionSettings\.globalDownstreamConnectionLimit/.test(error.message));
    assert.throws(() => globalDownstreamMaxConnections({ proxyMetadata: { ISTIO_META_GLOBAL_DOWNSTREAM_MAX_CONNECTIONS: 'lots' } }, {}), /ISTIO_META_GLOBAL_DOWNSTREAM_MAX_CONNECTIONS: "lots"/);
  });

  it('the Prometheus listener compresses (brotli, zstd, gzip) unless statsCompression is false', () => {
    assert.deepEqual(statsCompressionFilters({}).map((filter) => (filter as { name: string }).name), ['envoy.filters.http.compressor.brotli', 'envoy.filters.http.compressor.zstd', 'envoy.filters.http.compressor.gzip']);
    assert.deepEqual(statsCompressionFilters({ statsCompression: false }), []);
  });

  it('names what ProxyConfig asks for and the bootstrap does not render: tracers other than zipkin, the log and metrics services', () => {
    assert.deepEqual(unrenderedProxyConfig({}), []);
    assert.deepEqual(unrenderedProxyConfig({ tracing: { zipkin: { address: 'z:9411' }, sampling: 1 } }), []);
    assert.deepEqual(unrenderedProxyConfig({ tracing: { datadog: { address: 'd:8126' } }, envoyAccessLogService: { address: 'als:9000' }, envoyMetricsService: {} }), ['tracing.datadog', 'envoyAccessLogService']);
  });
});
