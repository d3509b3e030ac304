import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Registry } from '../../metrics/index.ts';
import { FakeClock } from '../../shared/clock.ts';
import { endings, type TerminationReason } from './ending.ts';
import { XdsStats } from './stats.ts';

/** Every ending: whether a working agent ends streams so (info, not warn), and what Istio's termination counters count. */
const rows: { reason: TerminationReason; expected: boolean; istiod?: string; envoy?: string }[] = [
  { reason: 'envoy_closed', expected: true, envoy: 'cancelled' },
  { reason: 'relay_stopped', expected: true },
  { reason: 'handed_over', expected: true },
  { reason: 'delta_unsupported', expected: true },
  { reason: 'upstream_closed', expected: false, istiod: 'cancelled' },
  { reason: 'upstream_error', expected: false, istiod: 'error' },
  { reason: 'bad_upstream_frame', expected: false, istiod: 'error' },
  { reason: 'bad_envoy_frame', expected: false, envoy: 'error' },
  { reason: 'dial_failed', expected: false },
];

const counted = async (registry: Registry, name: string) =>
  (await registry.getSingleMetric(name)!.get()).values.filter((value) => value.value > 0).map((value) => value.labels['type']);

describe('the endings table: one answer for the log and the metrics', () => {
  it('names every reason once', () => {
    assert.deepEqual(Object.keys(endings).sort(), rows.map((row) => row.reason).sort());
  });

  for (const row of rows) {
    it(`${row.reason}: ${row.expected ? 'expected (info)' : 'unexpected (warn)'}; Istio counts it as ${row.istiod ? `istiod ${row.istiod}` : row.envoy ? `envoy ${row.envoy}` : 'neither'}`, async () => {
      assert.equal(endings[row.reason].expected, row.expected);
      const registry = new Registry();
      const stats = new XdsStats(registry, new FakeClock());
      stats.streamOpened();
      stats.streamEnded(row.reason);
      assert.deepEqual(await counted(registry, 'istio_agent_istiod_connection_terminations'), row.istiod ? [row.istiod] : []);
      assert.deepEqual(await counted(registry, 'istio_agent_envoy_connection_terminations'), row.envoy ? [row.envoy] : []);
      assert.deepEqual(
        (await registry.getSingleMetric('istio_agent_xds_proxy_stream_terminations_total')!.get()).values.map((value) => [value.labels['reason'], value.value]),
        [[row.reason, 1]],
      );
      assert.deepEqual(stats.snapshot().terminations, { [row.reason]: 1 });
    });
  }
});
