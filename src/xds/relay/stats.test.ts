import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Registry } from '../../metrics/index.ts';
import { FakeClock } from '../../shared/clock.ts';
import { XdsStats } from './stats.ts';
import type { RequestFields } from '../../discovery/wire.ts';

const request = (typeUrl: string): RequestFields => ({ typeUrl, versionInfo: '', nonce: '', error: undefined, names: [], node: undefined, unsubscribe: [], initialVersions: 0 });
const cluster = 'type.googleapis.com/envoy.config.cluster.v3.Cluster';

test('type URLs Envoy\'s side makes up are counted as one "other" type', async () => {
  const registry = new Registry();
  const stats = new XdsStats(registry, new FakeClock());
  for (let i = 0; i < 5000; i++) stats.request(request(`type.googleapis.com/bogus.Type${i}`), 10, undefined);
  stats.request(request(cluster), 10, undefined);
  stats.request(request(''), 10, undefined);
  stats.response({ typeUrl: 'type.googleapis.com/bogus.Pushed', version: '1', nonce: 'n', resources: 1, removed: 0 }, 10);
  const requests = (await registry.getSingleMetric('istio_agent_xds_proxy_requests')!.get()).values;
  assert.deepEqual(requests.map((value) => [value.labels['type'], value.value]).sort(), [['envoy.config.cluster.v3.Cluster', 1], ['other', 5001]]);
  const bytes = (await registry.getSingleMetric('istio_agent_xds_proxy_bytes_total')!.get()).values;
  assert.equal(bytes.length, 3, 'Cluster and other requests, other responses');
  assert.deepEqual(Object.keys(stats.snapshot().types).sort(), ['other', cluster]);
});

test('Istio\'s own names count failed dials and stream ends by side (istiod or Envoy) and type', async () => {
  const registry = new Registry();
  const stats = new XdsStats(registry, new FakeClock());
  stats.upstreamDial('token', 'failed');
  stats.upstreamDial('token', 'certificate_refused');
  stats.upstreamDial('token', 'connected');
  for (const reason of ['upstream_error', 'upstream_closed', 'bad_upstream_frame', 'envoy_closed', 'bad_envoy_frame', 'relay_stopped'] as const) {
    stats.streamOpened();
    stats.streamEnded(reason);
  }
  const values = async (name: string) => (await registry.getSingleMetric(name)!.get()).values.map((value) => [value.labels['type'] ?? '', value.value]).sort();
  assert.deepEqual(await values('istio_agent_istiod_connection_failures'), [['', 2]]);
  assert.deepEqual(await values('istio_agent_istiod_connection_terminations'), [['cancelled', 1], ['error', 2]]);
  assert.deepEqual(await values('istio_agent_envoy_connection_terminations'), [['cancelled', 1], ['error', 1]]);
});
