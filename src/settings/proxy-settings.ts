import type { StatsInclusion } from '../bootstrap/stats-matcher.ts';
import type { ProxyType } from '../role/role.ts';
import type { BootstrapProxyConfig } from './bootstrap-proxy-config.ts';
import { certFileNames, istioRootCertPath, istioTokenPath } from '../shared/istio-files.ts';
import { bool, componentLevels, concurrency, count, duration, durationIn, envoyLogLevels, maxConcurrency, port, secondsOrDuration } from './parse-values.ts';
import { declareSettings, type SettingValues } from './setting.ts';
import { emptyIsUnset, workingDirPath, hostPort, optionalHostPort, optionalList } from './settle-values.ts';

/** The settings of `pilot-agent proxy` that make up its config (`AgentConfig`), one row each. */
export const proxySettings = declareSettings([
  {
    flag: 'serviceregistry',
    key: 'registry',
    value: '<name>',
    default: 'Kubernetes',
    choices: ['Kubernetes', 'Consul', 'Other'],
    description: 'Service registry that decides how IP, ID and domain are derived: Kubernetes, Consul or Other',
  },
  { flag: 'ip', value: '<address>', default: '', description: 'Proxy IP address; derived from the registry when empty' },
  { flag: 'id', value: '<id>', default: '', description: 'Proxy unique ID; derived from the registry when empty' },
  { flag: 'domain', value: '<domain>', default: '', description: 'DNS domain suffix; derived from the registry when empty' },
  {
    flag: 'configPath',
    proxyConfig: 'configPath',
    value: '<dir>',
    default: './etc/istio/proxy',
    settle: workingDirPath,
    description:
      'Directory for the rendered bootstraps (envoy-rev<epoch>.json) and the XDS socket; created 0700 when absent, an existing one keeps its mode (a warning when others may enter it)',
  },
  {
    flag: 'binaryPath',
    proxyConfig: 'binaryPath',
    value: '<file>',
    default: '/usr/local/bin/envoy',
    env: 'ENVOY_BIN',
    description: 'Path to the Envoy binary',
  },
  { flag: 'serviceCluster', proxyConfig: 'serviceCluster', value: '<name>', default: 'istio-proxy', description: 'Service cluster (node.cluster)' },
  {
    flag: 'drainDuration',
    key: 'drainDurationMs',
    proxyConfig: 'drainDuration',
    value: '<duration>',
    default: '45s',
    parse: duration,
    description: "Envoy --drain-time-s: how long a parent epoch's listeners drain after a hot restart",
  },
  {
    flag: 'parentShutdownDuration',
    key: 'parentShutdownDurationMs',
    proxyConfig: 'parentShutdownDuration',
    value: '<duration>',
    default: '1m0s',
    parse: duration,
    description: 'Envoy --parent-shutdown-time-s: when the parent epoch exits after a hot restart; not shorter than --drainDuration',
  },
  {
    flag: 'discoveryAddress',
    proxyConfig: 'discoveryAddress',
    value: '<host:port>',
    default: 'istiod.istio-system.svc:15012',
    settle: hostPort,
    description: "Address of the discovery server (Istio's default: istiod's TLS port, where the pod's token proves it)",
  },
  {
    flag: 'deltaXds',
    value: '[bool]',
    default: true,
    env: 'ISTIO_DELTA_XDS',
    parse: bool,
    description: 'Use Delta xDS (DELTA_GRPC), as Istio since 1.22; a discovery server without it is met with State of the World',
  },
  {
    flag: 'zipkinAddress',
    proxyConfig: 'tracing.zipkin.address',
    value: '<host:port>',
    default: '',
    settle: optionalHostPort,
    description: 'Zipkin collector; adds a zipkin cluster and tracing when set',
  },
  {
    flag: 'connectTimeout',
    key: 'connectTimeoutMs',
    value: '<duration>',
    default: '1s',
    parse: duration,
    description: "Connect timeout of the bootstrap's static clusters",
  },
  {
    flag: 'statsdUdpAddress',
    proxyConfig: 'statsdUdpAddress',
    value: '<host:port>',
    default: '',
    settle: optionalHostPort,
    description: 'Statsd sink address (UDP); adds a statsd stats sink when set',
  },
  {
    flag: 'proxyAdminPort',
    proxyConfig: 'proxyAdminPort',
    value: '<port>',
    default: '15000',
    parse: port,
    description: 'Envoy admin port, bound to 127.0.0.1',
  },
  {
    flag: 'controlPlaneAuthPolicy',
    proxyConfig: 'controlPlaneAuthPolicy',
    value: '<policy>',
    default: 'MUTUAL_TLS',
    choices: ['NONE', 'MUTUAL_TLS'],
    description:
      "Security towards the discovery server. Unset: TLS with the pod's token on port 15012 or with --xdsRootCa, else plaintext; MUTUAL_TLS given: our certificate from --certDir too (Istio 1.1); NONE given: as unset",
  },
  {
    flag: 'customConfigFile',
    proxyConfig: 'customConfigFile',
    value: '<file>',
    default: '',
    settle: emptyIsUnset,
    description:
      'Use this Envoy bootstrap as is, without rendering: JSON, or YAML when it ends in .yaml/.yml (Envoy reads the format from the extension, which the copies keep); the agent watches the admin port it names (a given --proxyAdminPort that differs is exit 2)',
  },
  {
    flag: 'templateFile',
    proxyConfig: 'proxyBootstrapTemplatePath',
    value: '<file>',
    default: '',
    env: 'ISTIO_BOOTSTRAP',
    settle: emptyIsUnset,
    description: 'Render this bootstrap template instead of templates/envoy_bootstrap.json',
  },
  {
    flag: 'concurrency',
    proxyConfig: 'concurrency',
    value: '<n>',
    default: '0',
    parse: concurrency,
    description: `Envoy worker threads, at most ${maxConcurrency} (0: one per core); when neither this nor ProxyConfig concurrency is set, ISTIO_CPU_LIMIT decides`,
  },
  {
    flag: 'fileFlushInterval',
    key: 'fileFlushIntervalMs',
    proxyConfig: 'fileFlushInterval',
    value: '<duration>',
    default: '1s',
    parse: durationIn({ minMs: 1 }),
    description: "Envoy --file-flush-interval-msec: how often Envoy flushes access log files (Envoy's own default is 10s); at least 1ms",
  },
  {
    flag: 'skipDeprecatedLogs',
    value: '[bool]',
    default: true,
    env: 'ENVOY_SKIP_DEPRECATED_LOGS',
    parse: bool,
    description: "Envoy --skip-deprecated-logs: leave out Envoy's log lines about deprecated config, as Istio does unless set to false",
  },
  {
    flag: 'bootstrapOverride',
    value: '<file>',
    default: '',
    env: 'ISTIO_BOOTSTRAP_OVERRIDE',
    settle: emptyIsUnset,
    description: 'YAML or JSON bootstrap that Envoy merges over the rendered one (--config-yaml); $(HOST_IP) in it becomes env HOST_IP',
  },
  {
    flag: 'proxyLogLevel',
    value: '<level>',
    default: 'warning',
    parse: envoyLogLevels,
    description:
      'Envoy log level: trace, debug, info, warning, error, critical, off; component:level parts may follow (info,misc:error) and then replace --proxyComponentLogLevel',
  },
  {
    flag: 'proxyComponentLogLevel',
    value: '<levels>',
    default: '',
    parse: componentLevels,
    description: "Envoy per-component log levels, e.g. upstream:debug,connection:trace; components are checked against Envoy 1.40's",
  },
  {
    flag: 'statusPort',
    proxyConfig: 'statusPort',
    value: '<port>',
    default: '15020',
    parse: port,
    description: "Port of the agent's status server (0 disables it)",
  },
  {
    flag: 'readinessPort',
    value: '<port>',
    default: '15021',
    parse: port,
    description: "Port of Envoy's readiness listener, which routes /healthz/ready to the status server (0: none)",
  },
  { flag: 'prometheusPort', value: '<port>', default: '15090', parse: port, description: "Port of Envoy's Prometheus listener (0: any free port)" },
  {
    flag: 'certDir',
    value: '<dir>',
    default: './etc/certs',
    env: 'CERT_DIR',
    settle: workingDirPath,
    description: `Directory of ${certFileNames.chain}, ${certFileNames.key} and ${certFileNames.root}, watched for rotation`,
  },
  {
    flag: 'ingressCertDir',
    value: '<dir>',
    default: '/etc/istio/ingress-certs',
    env: 'INGRESS_CERT_DIR',
    description: 'Directory of tls.crt and tls.key, also watched for `proxy ingress`',
  },
  {
    flag: 'certDebounce',
    key: 'certDebounceMs',
    value: '<duration>',
    default: '200ms',
    parse: duration,
    description: 'Quiet time after the last certificate file event before the files are read and Envoy hot-restarted',
  },
  {
    flag: 'certResync',
    key: 'certResyncMs',
    value: '<duration>',
    default: '10s',
    parse: durationIn({ minMs: 1000, zeroMeansOff: true }),
    description: 'Re-read the certificate files this often even without a file event, in case one was missed; at least 1s (0s: never)',
  },
  {
    flag: 'sdsSocket',
    value: '<path>',
    default: './var/run/secrets/workload-spiffe-uds/socket',
    settle: workingDirPath,
    description:
      'Unix socket of the SDS server Envoy reads certificates from (bootstrap cluster sds-grpc); when another process (SPIRE) already serves it, the agent serves nothing there',
  },
  {
    flag: 'certRotation',
    value: '<mode>',
    default: 'auto',
    choices: ['auto', 'sds', 'restart'],
    description:
      'How changed certificate files reach Envoy: auto (over SDS when a stream holds them, else hot restart), sds (never restart), restart (always hot-restart)',
  },
  {
    flag: 'statsInclusionPrefixes',
    value: '<list>',
    default: '',
    settle: optionalList,
    description:
      "Comma-separated Envoy stat prefixes to keep beyond Istio's defaults (as the sidecar.istio.io/statsInclusionPrefixes annotation, which it overrides)",
  },
  {
    flag: 'statsInclusionSuffixes',
    value: '<list>',
    default: '',
    settle: optionalList,
    description: "Comma-separated Envoy stat suffixes to keep beyond Istio's defaults (as sidecar.istio.io/statsInclusionSuffixes)",
  },
  {
    flag: 'statsInclusionRegexps',
    value: '<list>',
    default: '',
    settle: optionalList,
    description: "Comma-separated RE2 regexes of Envoy stats to keep beyond Istio's defaults (as sidecar.istio.io/statsInclusionRegexps)",
  },
  {
    flag: 'retryInitialDelay',
    key: 'retryInitialDelayMs',
    value: '<duration>',
    default: '200ms',
    parse: durationIn({ minMs: 10 }),
    description: 'First delay before restarting Envoy after it failed; doubles with every retry; at least 10ms',
  },
  {
    flag: 'retryBudget',
    value: '<n>',
    default: '10',
    parse: count,
    description: 'Restarts tried after failures before the agent exits 1; refilled by a new config or after 1m LIVE',
  },
  {
    flag: 'terminationDrainDuration',
    key: 'terminationDrainDurationMs',
    proxyConfig: 'terminationDrainDuration',
    value: '<duration>',
    default: '5s',
    env: 'TERMINATION_DRAIN_DURATION_SECONDS',
    parse: secondsOrDuration,
    description:
      "How long to drain on SIGTERM/SIGINT before stopping Envoy (a duration, or whole seconds); independent of --drainDuration, which is Envoy's own drain on hot restart",
  },
  {
    flag: 'exitOnZeroActiveConnections',
    value: '[bool]',
    default: false,
    env: 'EXIT_ON_ZERO_ACTIVE_CONNECTIONS',
    parse: bool,
    description: 'On termination, stop as soon as no downstream connection is left (after --minimumDrainDuration) instead of draining the whole time',
  },
  {
    flag: 'minimumDrainDuration',
    key: 'minimumDrainDurationMs',
    value: '<duration>',
    default: '5s',
    env: 'MINIMUM_DRAIN_DURATION',
    parse: duration,
    description: 'With --exitOnZeroActiveConnections: drain at least this long before checking connections',
  },
  {
    flag: 'xdsServerName',
    value: '<name>',
    default: '',
    env: 'ISTIOD_SAN',
    settle: emptyIsUnset,
    description: 'TLS server name expected of the discovery server (TLS or MUTUAL_TLS); the host of --discoveryAddress when empty',
  },
  {
    flag: 'xdsTokenFile',
    value: '<file>',
    default: '',
    settle: emptyIsUnset,
    description: `File whose content the agent sends to the discovery server as \`authorization: Bearer\`, read again for every new stream; with TLS to istiod, ${istioTokenPath} when empty`,
  },
  {
    flag: 'xdsRootCa',
    value: '<file>',
    default: '',
    env: 'XDS_ROOT_CA',
    settle: emptyIsUnset,
    description: `Root certificate the discovery server's TLS certificate must chain to; setting it (or a --discoveryAddress on port 15012, istiod's TLS port) makes the agent speak TLS to it with a token; SYSTEM: the OS trust store; when empty, ${certFileNames.root} in --certDir if there, else ${istioRootCertPath}`,
  },
  {
    flag: 'podInfoDir',
    value: '<dir>',
    default: './etc/istio/pod',
    settle: workingDirPath,
    description: "Downward-API directory whose `labels` and `annotations` files become the node's LABELS and ANNOTATIONS",
  },
]);

/** Everything `pilot-agent proxy` was told, typed and validated: one field per row above, plus what no flag sets. */
export type AgentConfig = SettingValues<typeof proxySettings> & {
  proxyType: ProxyType;
  /** ProxyConfig.proxyStatsMatcher: below the flags and the pod annotations, as in Istio. */
  proxyStatsMatcher?: StatsInclusion;
  /** ProxyConfig.extraStatTags: labels a stats extension puts in stat names, extracted as Istio does. */
  extraStatTags?: readonly string[];
  /** ProxyConfig's runtimeValues, statsCompression and connection limit, and what it configures that the bootstrap does not render. */
  bootstrapFields?: BootstrapProxyConfig;
  /** Whether the command line or ProxyConfig set --proxyAdminPort (a custom bootstrap's admin must then agree). */
  proxyAdminPortGiven?: boolean;
  /** Whether the command line or ProxyConfig set --controlPlaneAuthPolicy (MUTUAL_TLS given asks for Istio 1.1's certificate files). */
  controlPlaneAuthPolicyGiven?: boolean;
};
