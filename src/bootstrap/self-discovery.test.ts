import assert from 'node:assert/strict';
import { test } from 'node:test';
import { clusterManager, localCluster, selfDiscoveryEnabled } from './self-discovery.ts';

test('ENABLE_SELF_DISCOVERY is on for Go\'s true spellings only, as istiod reads the StringBool', () => {
  for (const value of ['true', 't', '1', 'TRUE', true]) assert.equal(selfDiscoveryEnabled({ ENABLE_SELF_DISCOVERY: value }), true, String(value));
  for (const value of ['false', '0', 'yes', '', false, 1, undefined]) assert.equal(selfDiscoveryEnabled({ ENABLE_SELF_DISCOVERY: value }), false, String(value));
});

test('self discovery renders local_cluster over ADS and names it in cluster_manager, with deferred cluster creation; nothing otherwise', () => {
  assert.deepEqual(clusterManager(true), { local_cluster_name: 'local_cluster', enable_deferred_cluster_creation: true });
  assert.equal(clusterManager(false), null);
  const cluster = localCluster() as { name: string; type: string; eds_cluster_config: unknown };
  assert.deepEqual([cluster.name, cluster.type], ['local_cluster', 'EDS']);
  assert.deepEqual(cluster.eds_cluster_config, { eds_config: { ads: {}, resource_api_version: 'V3' }, service_name: 'local_cluster' });
});

test('local_cluster balances by least request, zone aware from one endpoint on, its name closed for the stats tag', () => {
  assert.deepEqual(localCluster(), {
    name: 'local_cluster',
    alt_stat_name: 'local_cluster;',
    type: 'EDS',
    connect_timeout: '1s',
    load_balancing_policy: {
      policies: [{
        typed_extension_config: {
          name: 'envoy.load_balancing_policies.least_request',
          typed_config: {
            '@type': 'type.googleapis.com/envoy.extensions.load_balancing_policies.least_request.v3.LeastRequest',
            locality_lb_config: { zone_aware_lb_config: { min_cluster_size: '1' } },
          },
        },
      }],
    },
    eds_cluster_config: { eds_config: { ads: {}, resource_api_version: 'V3' }, service_name: 'local_cluster' },
  });
});
