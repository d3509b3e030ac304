import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AgentError } from '../shared/errors.ts';
import { statsAnnotationNames as names, statsAnnotationVariables } from './stats-annotations.ts';

test('no stats annotations: nothing rendered (Envoy\'s own defaults)', () => {
  assert.deepEqual(statsAnnotationVariables({}), { histogram_bucket_settings: null, stats_flush_interval: null, stats_eviction_interval: null });
  assert.deepEqual(statsAnnotationVariables({ [names.buckets]: '', [names.flush]: '' }).stats_flush_interval, null);
});

test('histogram buckets by prefix, sorted as Istio sorts them; flush and eviction intervals as Envoy durations', () => {
  const rendered = statsAnnotationVariables({
    [names.buckets]: '{"istiocustom": [1, 5, 10.5], "cluster.xds-grpc": [1, 10]}',
    [names.flush]: '10s',
    [names.eviction]: '1m0s',
  });
  assert.deepEqual(rendered, {
    histogram_bucket_settings: [
      { match: { prefix: 'cluster.xds-grpc' }, buckets: [1, 10] },
      { match: { prefix: 'istiocustom' }, buckets: [1, 5, 10.5] },
    ],
    stats_flush_interval: '10s',
    stats_eviction_interval: '60s',
  });
  assert.equal(statsAnnotationVariables({ [names.flush]: '1500ms' }).stats_flush_interval, '1.5s');
  // Without a flush annotation the eviction interval is checked against Envoy's 5s default, as Istio checks it.
  assert.equal(statsAnnotationVariables({ [names.eviction]: '30s' }).stats_eviction_interval, '30s');
  assert.equal(statsAnnotationVariables({ [names.buckets]: '{}' }).histogram_bucket_settings, null);
});

test('a value Envoy or Istio cannot use is exit 2 naming the annotation', () => {
  const cases: [Record<string, string>, RegExp][] = [
    [{ [names.buckets]: 'not json' }, /statsHistogramBuckets: is not valid JSON/],
    [{ [names.buckets]: '[1,2]' }, /statsHistogramBuckets: must be a JSON object/],
    [{ [names.buckets]: '{"a": []}' }, /statsHistogramBuckets: "a": buckets must be a non-empty list of numbers above 0/],
    [{ [names.buckets]: '{"a": [0, 1]}' }, /"a": buckets must be/],
    [{ [names.buckets]: '{"a": ["1"]}' }, /"a": buckets must be/],
    [{ [names.flush]: 'soon' }, /statsFlushInterval: "soon" is not a duration/],
    [{ [names.flush]: '5m' }, /statsFlushInterval: 5m is outside Envoy's range/],
    [{ [names.flush]: '0s' }, /statsFlushInterval: 0s is outside/],
    [{ [names.eviction]: '7s' }, /statsEvictionInterval: 7s is not a multiple of the stats flush interval \(5s\)/],
    [{ [names.flush]: '10s', [names.eviction]: '15s' }, /statsEvictionInterval: 15s is not a multiple of the stats flush interval \(10s\)/],
    [{ [names.eviction]: 'later' }, /statsEvictionInterval: "later" is not a duration/],
  ];
  for (const [annotations, message] of cases) {
    assert.throws(() => statsAnnotationVariables(annotations), (error: unknown) => error instanceof AgentError && error.code === 'BAD_ENV' && message.test(error.message), JSON.stringify(annotations));
  }
});

test('the edges: prefixes in any order come out sorted, 1ms flush and 0s eviction are taken, a value that is not text is not read', () => {
  const sorted = statsAnnotationVariables({ [names.buckets]: '{"istiocustom": [1], "z": [2], "a": [3], "cluster.b": [4]}' }).histogram_bucket_settings as { match: { prefix: string } }[];
  assert.deepEqual(sorted.map((setting) => setting.match.prefix), ['a', 'cluster.b', 'istiocustom', 'z']);
  assert.equal(statsAnnotationVariables({ [names.flush]: '1ms' }).stats_flush_interval, '0.001s');
  assert.equal(statsAnnotationVariables({ [names.eviction]: '0s' }).stats_eviction_interval, null);
  assert.deepEqual(statsAnnotationVariables({ [names.flush]: 10, [names.eviction]: 7 }), { histogram_bucket_settings: null, stats_flush_interval: null, stats_eviction_interval: null });
});

test('the edges of a bad value: JSON that is not an object, buckets that are not a list, a negative eviction', () => {
  const cases: [Record<string, string>, RegExp][] = [
    [{ [names.buckets]: '5' }, /statsHistogramBuckets: must be a JSON object/],
    [{ [names.buckets]: 'null' }, /statsHistogramBuckets: must be a JSON object/],
    [{ [names.buckets]: '{"a": "12"}' }, /"a": buckets must be a non-empty list/],
    [{ [names.eviction]: '-10s' }, /statsEvictionInterval: "-10s" is not a duration/],
  ];
  for (const [annotations, message] of cases) {
    assert.throws(() => statsAnnotationVariables(annotations), (error: unknown) => error instanceof AgentError && message.test(error.message), JSON.stringify(annotations));
  }
});
