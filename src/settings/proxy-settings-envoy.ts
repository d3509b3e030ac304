import { bool, componentLevels, concurrency, duration, durationIn, envoyLogLevels, maxConcurrency, port } from './parse-values.ts';
import { declareSettings } from './setting.ts';
import { emptyIsUnset, hostPort, optionalHostPort } from './settle-values.ts';

/**
 * `pilot-agent proxy` settings, part of `proxySettings`: Envoy and its bootstrap: drain times on hot restart, the discovery server, admin, the
 * template, worker threads and logs.
 */
export const envoySettings = declareSettings([
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
    description: 'Envoy admin port, bound to loopback (::1 in an IPv6-only pod, else 127.0.0.1)',
  },
  {
    flag: 'controlPlaneAuthPolicy',
    proxyConfig: 'controlPlaneAuthPolicy',
    value: '<policy>',
    default: 'MUTUAL_TLS',
    choices: ['NONE', 'MUTUAL_TLS'],
    description:
      "Security towards the discovery server. Unset: TLS with the pod's token on port 15012 or with --xdsRootCa, else plaintext; MUTUAL_TLS given: " +
        "TLS with the token, and our certificate from --certDir when it is there; NONE given: as unset",
  },
  {
    flag: 'customConfigFile',
    proxyConfig: 'customConfigFile',
    value: '<file>',
    default: '',
    settle: emptyIsUnset,
    description:
      'Use this Envoy bootstrap as is, without rendering: JSON, or YAML when it ends in .yaml/.yml (Envoy reads the format from the extension, ' +
        'which the copies keep); the agent watches the admin port it names (a given --proxyAdminPort that differs is exit 2)',
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
    description: `Envoy worker threads, at most ${maxConcurrency} (0: one per core); when neither this nor ProxyConfig concurrency is set, ` +
      `ISTIO_CPU_LIMIT decides`,
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
      'Envoy log level: trace, debug, info, warning, error, critical, off; component:level parts may follow (info,misc:error) and then replace ' +
        '--proxyComponentLogLevel',
  },
  {
    flag: 'proxyComponentLogLevel',
    value: '<levels>',
    default: '',
    parse: componentLevels,
    description: "Envoy per-component log levels, e.g. upstream:debug,connection:trace; components are checked against Envoy 1.40's",
  },
]);
