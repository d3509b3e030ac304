import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Registry } from '../metrics/index.ts';
import { registerDnsMetrics } from '../dns/metrics.ts';

// Istio's agent exports pkg/dns/client/monitoring.go's metrics under its istio_agent_ prefix, names as declared (no suffix added).
const istio: [string, string][] = [
  ['istio_agent_dns_requests_total', 'counter'],
  ['istio_agent_dns_upstream_requests_total', 'counter'],
  ['istio_agent_dns_upstream_failures_total', 'counter'],
  ['istio_agent_dns_upstream_request_duration_seconds', 'histogram'],
];

test('the DNS metrics carry Istio\'s names and types', async () => {
  const registry = new Registry();
  registerDnsMetrics(registry).upstreamDuration.observe({}, 0.5);
  const text = await registry.metrics();
  for (const [name, type] of istio) assert.match(text, new RegExp(`^# TYPE ${name} ${type}$`, 'm'), name);
  const buckets = [...text.matchAll(/^istio_agent_dns_upstream_request_duration_seconds_bucket\{le="([^"]+)"\}/gm)].map((match) => match[1]);
  assert.deepEqual(buckets, ['0.001', '0.005', '0.01', '0.1', '1', '5', '+Inf'], 'Istio\'s buckets');
});
