import { goBool } from '../settings/parse-values.ts';

/**
 * ENABLE_SELF_DISCOVERY (node metadata, ISTIO_META_ENABLE_SELF_DISCOVERY):
 * Envoy learns its own service's endpoints as `local_cluster`, over ADS, so
 * zone-aware load balancing can weigh them, as Istio's bootstrap renders it.
 */
export function selfDiscoveryEnabled(metadata: Readonly<Record<string, unknown>>): boolean {
  const value = metadata.ENABLE_SELF_DISCOVERY;
  return (typeof value === 'string' || typeof value === 'boolean') && goBool(String(value)) === true;
}

export function localCluster(): unknown {
  return {
    name: 'local_cluster',
    // The `;` ends the cluster's name for the cluster_name stats tag (stats-tags.ts).
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
  };
}

/**
 * Istio's cluster_manager: rendered only when something sets it (here, self
 * discovery; Istio also for an outlier log or load reporting, which this
 * agent does not render), and then with deferred cluster creation on.
 */
export function clusterManager(selfDiscovery: boolean): unknown {
  return selfDiscovery ? { local_cluster_name: 'local_cluster', enable_deferred_cluster_creation: true } : null;
}
