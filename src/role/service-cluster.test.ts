import assert from 'node:assert/strict';
import { test } from 'node:test';
import { serviceCluster } from './service-cluster.ts';

const both = { app: 'reviews', 'service.istio.io/canonical-name': 'r3' };

test('node.cluster as Istio\'s agent picks it (serviceClusterOrDefault)', () => {
  const rows: [name: string, metadata: Record<string, unknown>, want: string][] = [
    [
      'istio-proxy',
      { NAMESPACE: 'default', LABELS: { app: 'reviews', 'app.kubernetes.io/name': 'r2', 'service.istio.io/canonical-name': 'r3' } },
      'reviews.default',
    ],
    ['istio-proxy', { NAMESPACE: 'default', LABELS: { 'app.kubernetes.io/name': 'r2', 'service.istio.io/canonical-name': 'r3' } }, 'r2.default'],
    ['istio-proxy', { NAMESPACE: 'default', LABELS: { 'service.istio.io/canonical-name': 'r3' } }, 'r3.default'],
    ['istio-proxy', { NAMESPACE: 'default', LABELS: { version: 'v1' }, WORKLOAD_NAME: 'reviews-v1' }, 'reviews-v1.default'],
    ['istio-proxy', { NAMESPACE: 'default' }, 'istio-proxy.default'],
    ['istio-proxy', {}, 'istio-proxy'],
    ['', { NAMESPACE: 'shop', LABELS: { app: 'cart' } }, 'cart.shop'],
    ['reviews.bookinfo', { NAMESPACE: 'default', LABELS: { app: 'other' } }, 'reviews.bookinfo'],
    ['istio-proxy', { LABELS: { app: 'reviews' } }, 'reviews.'],
    // ProxyConfig tracingServiceName: the canonical service, canonical-name label first.
    ['web.shop', { NAMESPACE: 'default', LABELS: both, PROXY_CONFIG: { tracingServiceName: 'APP_LABEL_AND_NAMESPACE' } }, 'reviews.default'],
    ['istio-proxy', { NAMESPACE: 'default', LABELS: both, PROXY_CONFIG: { tracingServiceName: 'CANONICAL_NAME_ONLY' } }, 'r3'],
    ['istio-proxy', { NAMESPACE: 'default', LABELS: both, PROXY_CONFIG: { tracingServiceName: 'CANONICAL_NAME_AND_NAMESPACE' } }, 'r3.default'],
    ['istio-proxy', { NAMESPACE: 'default', WORKLOAD_NAME: 'reviews-v1', PROXY_CONFIG: { tracingServiceName: 'CANONICAL_NAME_ONLY' } }, 'reviews-v1'],
    ['istio-proxy', { NAMESPACE: 'default', PROXY_CONFIG: { tracingServiceName: 'CANONICAL_NAME_ONLY' } }, 'istio-proxy.default'],
    ['istio-proxy', { LABELS: both, PROXY_CONFIG: { tracingServiceName: 'CANONICAL_NAME_AND_NAMESPACE' } }, 'r3'],
  ];
  for (const [name, metadata, want] of rows) assert.equal(serviceCluster(name, metadata), want, `${name} ${JSON.stringify(metadata)}`);
});
