import { declareEnvSettings } from './env-settings.ts';
import { bool } from './parse-values.ts';

/** The status server's env settings (app probes, merged metrics), under Istio's names, one row each. */
export const statusEnv = declareEnvSettings({
  legacyLocalhostProbes: {
    env: 'REWRITE_PROBE_LEGACY_LOCALHOST_DESTINATION',
    default: 'false',
    parse: bool,
    description: 'true: app probes go to localhost instead of the pod IP (INSTANCE_IP), reaching apps the kubelet could not',
  },
  http2Probing: {
    env: 'ISTIO_ENABLE_HTTP2_PROBING',
    default: 'true',
    parse: bool,
    description: "HTTPS app probes offer HTTP/2 (ALPN), as the kubelet's; false: HTTP/1.1 only",
  },
  mergeEnvoyStats: {
    env: 'PILOT_AGENT_MERGE_ENVOY_STATS',
    default: 'true',
    parse: bool,
    description: "false: the merged metrics (/stats/prometheus, /metrics on the status port) leave Envoy's stats out",
  },
  probeKeepAlive: {
    env: 'ENABLE_PROBE_KEEPALIVE_CONNECTIONS',
    default: 'false',
    parse: bool,
    description: 'true: each app probe keeps its connection for the next one; false: one connection per probe, as the kubelet',
  },
});
