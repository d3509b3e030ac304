import { InvalidArgumentError, Option } from 'commander';
import { parseDuration } from '../shared/duration.ts';

/**
 * The flags of `pilot-agent proxy`, as one table: commander options, env
 * fallbacks, defaults and the README's flag table all come from here.
 */
export interface FlagSpec {
  flag: string;
  /** Commander's value placeholder, e.g. `<duration>`; absent for booleans. */
  value?: string;
  description: string;
  default?: string | boolean;
  /** The env var users already know for this setting, when there is one. */
  env?: string;
  parse?: (text: string) => unknown;
  choices?: readonly string[];
  hidden?: boolean;
}

const duration = (text: string) => {
  const ms = parseDuration(text);
  if (ms === undefined || ms < 0) throw new Error(`not a Go duration (e.g. 45s, 1m0s, 500ms)`);
  return ms;
};

const port = (text: string) => {
  const value = Number(text);
  if (!/^\d+$/.test(text) || value > 65535) throw new Error('not a port (0-65535)');
  return value;
};

const count = (text: string) => {
  if (!/^\d+$/.test(text)) throw new Error('not a non-negative integer');
  return Number(text);
};

const bool = (text: string) => {
  if (/^(true|1)$/i.test(text)) return true;
  if (/^(false|0)$/i.test(text)) return false;
  throw new Error('not a boolean (true or false)');
};

const portList = (text: string) => (text.trim() === '' ? [] : text.split(',').map((part) => port(part.trim())));

export const proxyFlags: readonly FlagSpec[] = [
  { flag: 'serviceregistry', value: '<name>', default: 'Kubernetes', choices: ['Kubernetes', 'Consul', 'Other'], description: 'Service registry that decides how IP, ID and domain are derived: Kubernetes, Consul or Other' },
  { flag: 'ip', value: '<address>', default: '', description: 'Proxy IP address; derived from the registry when empty' },
  { flag: 'id', value: '<id>', default: '', description: 'Proxy unique ID; derived from the registry when empty' },
  { flag: 'domain', value: '<domain>', default: '', description: 'DNS domain suffix; derived from the registry when empty' },
  { flag: 'configPath', value: '<dir>', default: '/etc/istio/proxy', description: 'Directory for the rendered bootstraps (envoy-rev<epoch>.json) and the XDS socket' },
  { flag: 'binaryPath', value: '<file>', default: '/usr/local/bin/envoy', env: 'ENVOY_BIN', description: 'Path to the Envoy binary' },
  { flag: 'serviceCluster', value: '<name>', default: 'istio-proxy', description: 'Service cluster (node.cluster)' },
  { flag: 'drainDuration', value: '<duration>', default: '45s', parse: duration, description: 'Envoy --drain-time-s: how long a parent epoch\'s listeners drain after a hot restart' },
  { flag: 'parentShutdownDuration', value: '<duration>', default: '1m0s', parse: duration, description: 'Envoy --parent-shutdown-time-s: when the parent epoch exits after a hot restart' },
  { flag: 'discoveryAddress', value: '<host:port>', default: 'istio-pilot:15010', description: 'Address of the discovery server' },
  { flag: 'deltaXds', value: '[bool]', default: false, env: 'ISTIO_DELTA_XDS', parse: bool, description: 'Use Delta xDS (DELTA_GRPC) instead of State of the World' },
  { flag: 'zipkinAddress', value: '<host:port>', default: '', description: 'Zipkin collector; adds a zipkin cluster and tracing when set' },
  { flag: 'connectTimeout', value: '<duration>', default: '1s', parse: duration, description: 'Connect timeout of the bootstrap\'s static clusters' },
  { flag: 'statsdUdpAddress', value: '<host:port>', default: '', description: 'Statsd sink address (UDP); adds a statsd stats sink when set' },
  { flag: 'proxyAdminPort', value: '<port>', default: '15000', parse: port, description: 'Envoy admin port, bound to 127.0.0.1' },
  { flag: 'controlPlaneAuthPolicy', value: '<policy>', default: 'NONE', choices: ['NONE', 'MUTUAL_TLS'], description: 'Security towards the discovery server: NONE or MUTUAL_TLS' },
  { flag: 'customConfigFile', value: '<file>', default: '', description: 'Use this Envoy bootstrap as is, without rendering' },
  { flag: 'templateFile', value: '<file>', default: '', env: 'ISTIO_BOOTSTRAP', description: 'Render this bootstrap template instead of templates/envoy_bootstrap.json' },
  { flag: 'concurrency', value: '<n>', default: '0', parse: count, description: 'Envoy worker threads (0: Envoy decides)' },
  { flag: 'proxyLogLevel', value: '<level>', default: 'warning', choices: ['trace', 'debug', 'info', 'warning', 'warn', 'error', 'critical', 'off'], description: 'Envoy log level: trace, debug, info, warning, error, critical, off' },
  { flag: 'proxyComponentLogLevel', value: '<levels>', default: '', description: 'Envoy per-component log levels, e.g. upstream:debug,connection:trace' },
  { flag: 'statusPort', value: '<port>', default: '15020', parse: port, description: 'Port of the agent\'s status server (0 disables it)' },
  { flag: 'readinessPort', value: '<port>', default: '15021', parse: port, description: 'Port of Envoy\'s readiness listener, which routes /healthz/ready to the status server (0: none)' },
  { flag: 'applicationPorts', value: '<ports>', default: '', parse: portList, description: 'Comma-separated application ports whose inbound listeners readiness may require' },
  { flag: 'prometheusPort', value: '<port>', default: '15090', parse: port, description: 'Port of Envoy\'s Prometheus listener (0: any free port)' },
  { flag: 'certDir', value: '<dir>', default: '/etc/certs', env: 'CERT_DIR', description: 'Directory of cert-chain.pem, key.pem and root-cert.pem, watched for rotation' },
  { flag: 'ingressCertDir', value: '<dir>', default: '/etc/istio/ingress-certs', env: 'INGRESS_CERT_DIR', description: 'Directory of tls.crt and tls.key, also watched for `proxy ingress`' },
  { flag: 'certDebounce', value: '<duration>', default: '200ms', parse: duration, description: 'Quiet time after the last certificate file event before the files are read and Envoy hot-restarted' },
  { flag: 'certResync', value: '<duration>', default: '10s', parse: duration, description: 'Re-read the certificate files this often even without a file event, in case one was missed (0s: never)' },
  { flag: 'retryInitialDelay', value: '<duration>', default: '200ms', parse: duration, description: 'First delay before restarting Envoy after it failed; doubles with every retry' },
  { flag: 'retryBudget', value: '<n>', default: '10', parse: count, description: 'Restarts tried after failures before the agent exits 1; refilled by a new config or after 1m LIVE' },
  { flag: 'terminationDrainDuration', value: '<duration>', default: '5s', env: 'TERMINATION_DRAIN_DURATION_SECONDS', parse: (text: string) => (/^\d+$/.test(text) ? Number(text) * 1000 : duration(text)), description: 'How long to drain on SIGTERM/SIGINT before stopping Envoy (a duration, or whole seconds); independent of --drainDuration, which is Envoy\'s own drain on hot restart' },
  { flag: 'exitOnZeroActiveConnections', value: '[bool]', default: false, env: 'EXIT_ON_ZERO_ACTIVE_CONNECTIONS', parse: bool, description: 'On termination, stop as soon as no downstream connection is left (after --minimumDrainDuration) instead of draining the whole time' },
  { flag: 'minimumDrainDuration', value: '<duration>', default: '5s', env: 'MINIMUM_DRAIN_DURATION', parse: duration, description: 'With --exitOnZeroActiveConnections: drain at least this long before checking connections' },
  { flag: 'xdsServerName', value: '<name>', default: '', description: 'TLS server name expected of the discovery server with MUTUAL_TLS; the host of --discoveryAddress when empty' },
  { flag: 'xdsTokenFile', value: '<file>', default: '', description: 'File whose content the agent sends to the discovery server as `authorization: Bearer`, read again for every new stream' },
  { flag: 'log_output_level', value: '<level>', default: 'info', description: 'Agent log level: trace, debug, info, warn, error, fatal; or per component, e.g. default:info,xds:debug' },
  { flag: 'print-bootstrap', default: false, description: 'Print the rendered bootstrap to stdout and exit without starting Envoy' },
  { flag: 'availabilityZone', value: '<zone>', hidden: true, description: 'Removed in 1.1; accepted and ignored' },
  { flag: 'discoveryRefreshDelay', value: '<duration>', hidden: true, description: 'v1 polling interval, removed; accepted and ignored' },
];

/** Flags kept for old command lines; the agent warns when they are given. */
export const ignoredFlags = ['availabilityZone', 'discoveryRefreshDelay'] as const;

/** Turns a table row into a commander option. */
export function toOption(spec: FlagSpec): Option {
  const option = new Option(`--${spec.flag}${spec.value ? ` ${spec.value}` : ''}`, spec.description);
  if (spec.default !== undefined && spec.default !== '') option.default(spec.parse && typeof spec.default === 'string' ? spec.parse(spec.default) : spec.default, String(spec.default));
  if (spec.env) option.env(spec.env);
  if (spec.parse) option.argParser((text: string) => wrapParse(spec, text));
  if (spec.choices) option.choices(spec.choices);
  if (spec.hidden) option.hideHelp();
  return option;
}

function wrapParse(spec: FlagSpec, text: string): unknown {
  try {
    return spec.parse!(text);
  } catch (error) {
    throw new InvalidArgumentError((error as Error).message);
  }
}
