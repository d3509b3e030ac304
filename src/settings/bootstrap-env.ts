import { declareEnvSettings } from './env-settings.ts';
import { bool, port } from './parse-values.ts';

/**
 * Env-only settings of Envoy's bootstrap and command line, under Istio's
 * names. ProxyConfig's `proxyMetadata` is read under the env, as for DNS:
 * Istio reads METRICS_LOCALHOST_ACCESS_ONLY from proxyMetadata only, which
 * its injector also puts in the env.
 */
export const bootstrapEnv = declareEnvSettings({
  dualStack: {
    env: 'ISTIO_DUAL_STACK',
    default: 'false',
    parse: bool,
    description: "true: on a pod with IPv4 and IPv6 addresses, Envoy's Prometheus and readiness listeners bind both families (the first IP's family first)",
  },
  metricsLocalhostOnly: {
    env: 'METRICS_LOCALHOST_ACCESS_ONLY',
    default: 'false',
    parse: bool,
    description: "true: Envoy's Prometheus listener binds loopback, out of the pod network's reach (scrape the status port's merged metrics instead)",
  },
  secureMetricsPort: {
    env: 'ENVOY_SECURE_METRICS_PORT',
    default: '0',
    parse: port,
    description: "An mTLS listener (client certificates from the mesh's root) serving Envoy's own stats at /stats/prometheus; 0: none",
  },
  secureMergedMetricsPort: {
    env: 'ENVOY_SECURE_MERGED_METRICS_PORT',
    default: '0',
    parse: port,
    description: "An mTLS listener serving the status port's merged metrics (Envoy, agent, app) at /stats/prometheus and /metrics; 0: none",
  },
  enableCoreDump: {
    env: 'ISTIO_ENVOY_ENABLE_CORE_DUMP',
    default: 'false',
    parse: bool,
    description: 'true: Envoy runs with --enable-core-dump (the pod still needs a core pattern and ulimit, as with Istio)',
  },
});
