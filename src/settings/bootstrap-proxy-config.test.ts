import assert from 'node:assert/strict';
import { test } from 'node:test';
import { bootstrapProxyConfig } from './bootstrap-proxy-config.ts';
import { mergeProxyConfigs } from './proxy-config-sources.ts';

const unrendered = (value: Record<string, unknown>) => bootstrapProxyConfig(mergeProxyConfigs([{ name: 'mesh', value }])).unrendered;

test('tracing providers and services the bootstrap does not render are named; rendered or unset ones are not', () => {
  const cases: [string, Record<string, unknown>, string[]][] = [
    ['nothing configured (a default pod)', {}, []],
    ['empty tracing, sampling only', { tracing: {}, envoyMetricsService: {} }, []],
    ['tracing: {} with sampling', { tracing: { sampling: 1, customTags: {} } }, []],
    ['zipkin is rendered', { tracing: { zipkin: { address: 'zipkin:9411' } } }, []],
    ['datadog', { tracing: { datadog: { address: '$(HOST_IP):8126' } } }, ['tracing.datadog']],
    [
      'lightstep, stackdriver, openCensusAgent',
      { tracing: { lightstep: {}, stackdriver: { debug: false }, openCensusAgent: { address: 'oc:55678' } } },
      ['tracing.lightstep', 'tracing.stackdriver', 'tracing.openCensusAgent'],
    ],
    ["the tracer's TLS", { tracing: { zipkin: { address: 'z:9411' }, tlsSettings: { mode: 'SIMPLE' } } }, ['tracing.tlsSettings']],
    [
      'metrics and access log services with an address',
      { envoyMetricsService: { address: 'ms:15000' }, envoyAccessLogService: { address: 'als:15000' } },
      ['envoyMetricsService', 'envoyAccessLogService'],
    ],
    ['a service without an address', { envoyAccessLogService: { address: '' } }, []],
    ['the deprecated address field', { envoyMetricsServiceAddress: 'ms:15000' }, ['envoyMetricsServiceAddress']],
  ];
  for (const [name, value, expected] of cases) assert.deepEqual(unrendered(value), expected, name);
});

test('fileFlushMinSizeKb: a size above 0 is taken, 0 or unset is Envoy\'s default, anything else names the field', () => {
  const size = (value: unknown) =>
    bootstrapProxyConfig(mergeProxyConfigs([{ name: 'mesh', value: value === undefined ? {} : { fileFlushMinSizeKb: value } }])).fileFlushMinSizeKb;
  assert.deepEqual([size(64), size('128'), size(0), size(undefined)], [64, 128, undefined, undefined]);
  for (const bad of [-1, 4294967296]) assert.throws(() => size(bad), /mesh: field fileFlushMinSizeKb: .* is not a size in KiB/);
});
