import assert from 'node:assert/strict';
import { test } from 'node:test';
import { envoyLocality, localityFromLabels } from './locality.ts';
import { buildNodeMetadata } from './metadata.ts';
import { readNodeEnv } from '../settings/pod-env.ts';

test('the locality from the pod\'s labels, as Istio\'s agent reads and sends it', () => {
  const rows: [labels: Record<string, string> | undefined, locality: string | undefined, envoy: Record<string, string>][] = [
    [undefined, undefined, {}],
    [{ app: 'a' }, undefined, {}],
    [{ 'istio-locality': 'us-east1.us-east1-b.rack1' }, 'us-east1/us-east1-b/rack1', { region: 'us-east1', zone: 'us-east1-b', sub_zone: 'rack1' }],
    [{ 'topology.istio.io/locality': 'eu.eu-1', 'istio-locality': 'us.us-1' }, 'eu/eu-1', { region: 'eu', zone: 'eu-1' }],
    [{ 'istio-locality': 'r/z.with.dots' }, 'r/z.with.dots', { region: 'r', zone: 'z.with.dots' }],
    [{ 'istio-locality': 'r1' }, 'r1', { region: 'r1' }],
    [{ 'istio-locality': '' }, undefined, {}],
  ];
  for (const [labels, locality, envoy] of rows) {
    assert.equal(localityFromLabels(labels), locality, JSON.stringify(labels));
    assert.deepEqual(envoyLocality(locality), envoy, JSON.stringify(labels));
  }
});

test('LABELS carries the locality back under istio-locality, with / for .', () => {
  const agent = { instanceIps: [], envoyStatusPort: 0, envoyPrometheusPort: 0, exitOnZeroActiveConnections: false, proxyConfig: {} };
  const metadata = buildNodeMetadata({ node: readNodeEnv({}), podInfo: { labels: { app: 'a', 'topology.istio.io/locality': 'eu.eu-1' } }, agent });
  assert.deepEqual(metadata.LABELS, { app: 'a', 'topology.istio.io/locality': 'eu.eu-1', 'istio-locality': 'eu/eu-1' });
  assert.equal(buildNodeMetadata({ node: readNodeEnv({}), podInfo: { labels: { app: 'a' } }, agent }).LABELS !== undefined, true);
  assert.deepEqual(buildNodeMetadata({ node: readNodeEnv({}), podInfo: { labels: { app: 'a' } }, agent }).LABELS, { app: 'a' });
});
