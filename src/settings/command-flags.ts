import { bool, port } from './parse-values.ts';
import { declareSettings } from './setting.ts';

/** Flags of `pilot-agent proxy` that steer the command itself, not the proxy's config. */
export const commandFlags = declareSettings([
  {
    flag: 'log_output_level',
    value: '<level>',
    default: 'info',
    description: 'Agent log level: trace, debug, info, warn, error, fatal; or per component, e.g. default:info,xds:debug',
  },
  {
    flag: 'log_as_json',
    value: '[bool]',
    default: false,
    parse: bool,
    description:
      "Agent logs as JSON lines even on a terminal (they always are otherwise); Envoy writes its own lines in Istio's JSON format (the bootstrap's " +
        "application_log_config), which the agent reads into its log",
  },
  { flag: 'print-bootstrap', default: false, description: 'Print the rendered bootstrap to stdout and exit without starting Envoy' },
  {
    flag: 'meshConfig',
    value: '<file>',
    default: './etc/istio/config/mesh',
    description:
      'Istio mesh config file; its defaultConfig is the base ProxyConfig, under PROXY_CONFIG and the proxy.istio.io/config annotation (a missing file is fine)',
  },
]);

/** Istio's injection template and its `proxy` command pass these; we accept them so those pods start, and warn. */
export const istioCompatFlags = declareSettings([
  {
    flag: 'stsPort',
    value: '<port>',
    parse: port,
    hidden: true,
    ignored: 'unimplemented',
    description: "Istio's STS server for telemetry tokens: not implemented",
  },
  { flag: 'outlierLogPath', value: '<path>', hidden: true, ignored: 'unimplemented', description: 'Envoy outlier event log: not implemented' },
  { flag: 'tokenManagerPlugin', value: '<name>', hidden: true, ignored: 'unimplemented', description: 'Istio STS token manager: not implemented' },
  { flag: 'profiling', value: '[bool]', parse: bool, hidden: true, ignored: 'unimplemented', description: 'Go pprof endpoints: not applicable' },
  { flag: 'log_target', value: '<paths>', hidden: true, ignored: 'unimplemented', description: 'Istio log sinks: the agent logs to stdout' },
  { flag: 'log_caller', value: '<scopes>', hidden: true, ignored: 'unimplemented', description: 'Istio caller info in logs: not implemented' },
  { flag: 'log_stacktrace_level', value: '<levels>', hidden: true, ignored: 'unimplemented', description: 'Istio stack traces in logs: not implemented' },
  { flag: 'log_rotate', value: '<path>', hidden: true, ignored: 'unimplemented', description: 'Istio log rotation: not implemented' },
  { flag: 'log_rotate_max_age', value: '<days>', hidden: true, ignored: 'unimplemented', description: 'Istio log rotation: not implemented' },
  { flag: 'log_rotate_max_backups', value: '<n>', hidden: true, ignored: 'unimplemented', description: 'Istio log rotation: not implemented' },
  { flag: 'log_rotate_max_size', value: '<MB>', hidden: true, ignored: 'unimplemented', description: 'Istio log rotation: not implemented' },
  { flag: 'availabilityZone', value: '<zone>', hidden: true, ignored: 'obsolete', description: 'Removed in 1.1; accepted and ignored' },
  { flag: 'discoveryRefreshDelay', value: '<duration>', hidden: true, ignored: 'obsolete', description: 'v1 polling interval, removed; accepted and ignored' },
  // Older Istio agents made readiness wait for inbound listeners on these ports; today's has no such flag.
  {
    flag: 'applicationPorts',
    value: '<ports>',
    hidden: true,
    ignored: 'obsolete',
    description: "Removed from Istio's agent (readiness no longer checks application ports); accepted and ignored",
  },
]);
