import { InvalidArgumentError, Option } from 'commander';
import { envoyComponents } from '../envoy/components.ts';
import { durationRangeError, parseDuration, type DurationRange } from '../shared/duration.ts';

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
  /** The ProxyConfig field (dotted for nested messages) that sets it when the command line and env do not. */
  proxyConfig?: string;
  parse?: (text: string) => unknown;
  choices?: readonly string[];
  hidden?: boolean;
}

/** A Go duration within range: past 2^31-1 ms a Node timer fires after 1 ms. */
const durationIn = (range: DurationRange) => (text: string) => inRange(parseDuration(text), range);
const duration = durationIn({});

/** TERMINATION_DRAIN_DURATION_SECONDS is whole seconds; the flag also takes a duration. */
const secondsOrDuration = (text: string) => inRange(/^\d+$/.test(text) ? Number(text) * 1000 : parseDuration(text), {});

function inRange(ms: number | undefined, range: DurationRange): number {
  if (ms === undefined) throw new Error('not a Go duration (e.g. 45s, 1m0s, 500ms)');
  const error = durationRangeError(ms, range);
  if (error) throw new Error(error);
  return ms;
}

const port = (text: string) => {
  const value = Number(text);
  if (!/^\d+$/.test(text) || value > 65535) throw new Error('not a port (0-65535)');
  return value;
};

const count = (text: string) => {
  if (!/^\d+$/.test(text)) throw new Error('not a non-negative integer');
  return Number(text);
};

/**
 * Envoy starts one worker thread per unit, each with its own listeners,
 * connection pools and thread-local stats: more workers than cores only
 * cost memory and start time (100000 failed at run time, after minutes of
 * retries). 512 is above the core count of the largest common nodes.
 */
export const maxConcurrency = 512;

const concurrency = (text: string) => {
  const value = count(text);
  if (value > maxConcurrency) throw new Error(`more than ${maxConcurrency} worker threads (0: one per core)`);
  return value;
};

const envoyLevels = ['trace', 'debug', 'info', 'warning', 'warn', 'error', 'critical', 'off'] as const;

/** `component:level,…`, checked against the loggers of Envoy 1.40 (src/envoy/components.ts). */
const componentLevels = (text: string) => {
  for (const pair of text.split(',').filter((part) => part.trim() !== '')) {
    const [component = '', level = '', extra] = pair.trim().split(':');
    if (extra !== undefined || !level) throw new Error(`"${pair}" is not component:level`);
    if (!envoyComponents.has(component)) throw new Error(`"${component}" is not an Envoy log component (e.g. upstream, http, config)`);
    if (!(envoyLevels as readonly string[]).includes(level)) throw new Error(`"${level}" is not an Envoy log level (${envoyLevels.join(', ')})`);
  }
  return text;
};

const bool = (text: string) => {
  if (/^(true|1)$/i.test(text)) return true;
  if (/^(false|0)$/i.test(text)) return false;
  throw new Error('not a boolean (true or false)');
};


export const proxyFlags: readonly FlagSpec[] = [
  { flag: 'serviceregistry', value: '<name>', default: 'Kubernetes', choices: ['Kubernetes', 'Consul', 'Other'], description: 'Service registry that decides how IP, ID and domain are derived: Kubernetes, Consul or Other' },
  { flag: 'ip', value: '<address>', default: '', description: 'Proxy IP address; derived from the registry when empty' },
  { flag: 'id', value: '<id>', default: '', description: 'Proxy unique ID; derived from the registry when empty' },
  { flag: 'domain', value: '<domain>', default: '', description: 'DNS domain suffix; derived from the registry when empty' },
  { flag: 'configPath', proxyConfig: 'configPath', value: '<dir>', default: '/etc/istio/proxy', description: 'Directory for the rendered bootstraps (envoy-rev<epoch>.json) and the XDS socket; created 0700 when absent, an existing one keeps its mode (a warning when others may enter it)' },
  { flag: 'binaryPath', proxyConfig: 'binaryPath', value: '<file>', default: '/usr/local/bin/envoy', env: 'ENVOY_BIN', description: 'Path to the Envoy binary' },
  { flag: 'serviceCluster', proxyConfig: 'serviceCluster', value: '<name>', default: 'istio-proxy', description: 'Service cluster (node.cluster)' },
  { flag: 'drainDuration', proxyConfig: 'drainDuration', value: '<duration>', default: '45s', parse: duration, description: 'Envoy --drain-time-s: how long a parent epoch\'s listeners drain after a hot restart' },
  { flag: 'parentShutdownDuration', proxyConfig: 'parentShutdownDuration', value: '<duration>', default: '1m0s', parse: duration, description: 'Envoy --parent-shutdown-time-s: when the parent epoch exits after a hot restart; not shorter than --drainDuration' },
  { flag: 'discoveryAddress', proxyConfig: 'discoveryAddress', value: '<host:port>', default: 'istio-pilot:15010', description: 'Address of the discovery server' },
  { flag: 'deltaXds', value: '[bool]', default: false, env: 'ISTIO_DELTA_XDS', parse: bool, description: 'Use Delta xDS (DELTA_GRPC) instead of State of the World' },
  { flag: 'zipkinAddress', proxyConfig: 'tracing.zipkin.address', value: '<host:port>', default: '', description: 'Zipkin collector; adds a zipkin cluster and tracing when set' },
  { flag: 'connectTimeout', value: '<duration>', default: '1s', parse: duration, description: 'Connect timeout of the bootstrap\'s static clusters' },
  { flag: 'statsdUdpAddress', proxyConfig: 'statsdUdpAddress', value: '<host:port>', default: '', description: 'Statsd sink address (UDP); adds a statsd stats sink when set' },
  { flag: 'proxyAdminPort', proxyConfig: 'proxyAdminPort', value: '<port>', default: '15000', parse: port, description: 'Envoy admin port, bound to 127.0.0.1' },
  { flag: 'controlPlaneAuthPolicy', proxyConfig: 'controlPlaneAuthPolicy', value: '<policy>', default: 'NONE', choices: ['NONE', 'MUTUAL_TLS'], description: 'Security towards the discovery server: NONE or MUTUAL_TLS' },
  { flag: 'customConfigFile', proxyConfig: 'customConfigFile', value: '<file>', default: '', description: 'Use this Envoy bootstrap as is, without rendering: JSON, or YAML when it ends in .yaml/.yml (Envoy reads the format from the extension, which the copies keep)' },
  { flag: 'templateFile', proxyConfig: 'proxyBootstrapTemplatePath', value: '<file>', default: '', env: 'ISTIO_BOOTSTRAP', description: 'Render this bootstrap template instead of templates/envoy_bootstrap.json' },
  { flag: 'concurrency', proxyConfig: 'concurrency', value: '<n>', default: '0', parse: concurrency, description: `Envoy worker threads, at most ${maxConcurrency} (0: Envoy decides)` },
  { flag: 'proxyLogLevel', value: '<level>', default: 'warning', choices: envoyLevels, description: 'Envoy log level: trace, debug, info, warning, error, critical, off' },
  { flag: 'proxyComponentLogLevel', value: '<levels>', default: '', parse: componentLevels, description: 'Envoy per-component log levels, e.g. upstream:debug,connection:trace; components are checked against Envoy 1.40\'s' },
  { flag: 'statusPort', proxyConfig: 'statusPort', value: '<port>', default: '15020', parse: port, description: 'Port of the agent\'s status server (0 disables it)' },
  { flag: 'readinessPort', value: '<port>', default: '15021', parse: port, description: 'Port of Envoy\'s readiness listener, which routes /healthz/ready to the status server (0: none)' },
  { flag: 'prometheusPort', value: '<port>', default: '15090', parse: port, description: 'Port of Envoy\'s Prometheus listener (0: any free port)' },
  { flag: 'certDir', value: '<dir>', default: '/etc/certs', env: 'CERT_DIR', description: 'Directory of cert-chain.pem, key.pem and root-cert.pem, watched for rotation' },
  { flag: 'ingressCertDir', value: '<dir>', default: '/etc/istio/ingress-certs', env: 'INGRESS_CERT_DIR', description: 'Directory of tls.crt and tls.key, also watched for `proxy ingress`' },
  { flag: 'certDebounce', value: '<duration>', default: '200ms', parse: duration, description: 'Quiet time after the last certificate file event before the files are read and Envoy hot-restarted' },
  { flag: 'certResync', value: '<duration>', default: '10s', parse: durationIn({ minMs: 1000, zeroMeansOff: true }), description: 'Re-read the certificate files this often even without a file event, in case one was missed; at least 1s (0s: never)' },
  { flag: 'sdsSocket', value: '<path>', default: '/var/run/secrets/workload-spiffe-uds/socket', description: 'Unix socket of the SDS server Envoy reads certificates from (bootstrap cluster sds-grpc); when another process (SPIRE) already serves it, the agent serves nothing there' },
  { flag: 'certRotation', value: '<mode>', default: 'auto', choices: ['auto', 'sds', 'restart'], description: 'How changed certificate files reach Envoy: auto (over SDS when a stream holds them, else hot restart), sds (never restart), restart (always hot-restart)' },
  { flag: 'statsInclusionPrefixes', value: '<list>', default: '', description: 'Comma-separated Envoy stat prefixes to keep beyond Istio\'s defaults (as the sidecar.istio.io/statsInclusionPrefixes annotation, which it overrides)' },
  { flag: 'statsInclusionSuffixes', value: '<list>', default: '', description: 'Comma-separated Envoy stat suffixes to keep beyond Istio\'s defaults (as sidecar.istio.io/statsInclusionSuffixes)' },
  { flag: 'statsInclusionRegexps', value: '<list>', default: '', description: 'Comma-separated RE2 regexes of Envoy stats to keep beyond Istio\'s defaults (as sidecar.istio.io/statsInclusionRegexps)' },
  { flag: 'retryInitialDelay', value: '<duration>', default: '200ms', parse: durationIn({ minMs: 10 }), description: 'First delay before restarting Envoy after it failed; doubles with every retry; at least 10ms' },
  { flag: 'retryBudget', value: '<n>', default: '10', parse: count, description: 'Restarts tried after failures before the agent exits 1; refilled by a new config or after 1m LIVE' },
  { flag: 'terminationDrainDuration', proxyConfig: 'terminationDrainDuration', value: '<duration>', default: '5s', env: 'TERMINATION_DRAIN_DURATION_SECONDS', parse: secondsOrDuration, description: 'How long to drain on SIGTERM/SIGINT before stopping Envoy (a duration, or whole seconds); independent of --drainDuration, which is Envoy\'s own drain on hot restart' },
  { flag: 'exitOnZeroActiveConnections', value: '[bool]', default: false, env: 'EXIT_ON_ZERO_ACTIVE_CONNECTIONS', parse: bool, description: 'On termination, stop as soon as no downstream connection is left (after --minimumDrainDuration) instead of draining the whole time' },
  { flag: 'minimumDrainDuration', value: '<duration>', default: '5s', env: 'MINIMUM_DRAIN_DURATION', parse: duration, description: 'With --exitOnZeroActiveConnections: drain at least this long before checking connections' },
  { flag: 'xdsServerName', value: '<name>', default: '', env: 'ISTIOD_SAN', description: 'TLS server name expected of the discovery server (TLS or MUTUAL_TLS); the host of --discoveryAddress when empty' },
  { flag: 'xdsTokenFile', value: '<file>', default: '', description: 'File whose content the agent sends to the discovery server as `authorization: Bearer`, read again for every new stream; with TLS to istiod, /var/run/secrets/tokens/istio-token when empty' },
  { flag: 'xdsRootCa', value: '<file>', default: '', env: 'XDS_ROOT_CA', description: 'Root certificate the discovery server\'s TLS certificate must chain to; setting it (or a --discoveryAddress on port 15012, istiod\'s TLS port) makes the agent speak TLS to it with a token; /var/run/secrets/istio/root-cert.pem when empty' },
  { flag: 'podInfoDir', value: '<dir>', default: '/etc/istio/pod', description: 'Downward-API directory whose `labels` and `annotations` files become the node\'s LABELS and ANNOTATIONS' },
  { flag: 'log_output_level', value: '<level>', default: 'info', description: 'Agent log level: trace, debug, info, warn, error, fatal; or per component, e.g. default:info,xds:debug' },
  { flag: 'log_as_json', value: '[bool]', default: false, parse: bool, description: 'Agent logs as JSON lines even on a terminal (they always are otherwise)' },
  { flag: 'print-bootstrap', default: false, description: 'Print the rendered bootstrap to stdout and exit without starting Envoy' },
  // Istio's injection template and its `proxy` command pass these; we accept them so those pods start.
  { flag: 'stsPort', value: '<port>', parse: port, hidden: true, description: 'Istio\'s STS server for telemetry tokens: not implemented' },
  { flag: 'outlierLogPath', value: '<path>', hidden: true, description: 'Envoy outlier event log: not implemented' },
  { flag: 'meshConfig', value: '<file>', default: './etc/istio/config/mesh', description: 'Istio mesh config file; its defaultConfig is the base ProxyConfig, under PROXY_CONFIG and the proxy.istio.io/config annotation (a missing file is fine)' },
  { flag: 'tokenManagerPlugin', value: '<name>', hidden: true, description: 'Istio STS token manager: not implemented' },
  { flag: 'profiling', value: '[bool]', parse: bool, hidden: true, description: 'Go pprof endpoints: not applicable' },
  { flag: 'log_target', value: '<paths>', hidden: true, description: 'Istio log sinks: the agent logs to stdout' },
  { flag: 'log_caller', value: '<scopes>', hidden: true, description: 'Istio caller info in logs: not implemented' },
  { flag: 'log_stacktrace_level', value: '<levels>', hidden: true, description: 'Istio stack traces in logs: not implemented' },
  { flag: 'log_rotate', value: '<path>', hidden: true, description: 'Istio log rotation: not implemented' },
  { flag: 'log_rotate_max_age', value: '<days>', hidden: true, description: 'Istio log rotation: not implemented' },
  { flag: 'log_rotate_max_backups', value: '<n>', hidden: true, description: 'Istio log rotation: not implemented' },
  { flag: 'log_rotate_max_size', value: '<MB>', hidden: true, description: 'Istio log rotation: not implemented' },
  { flag: 'availabilityZone', value: '<zone>', hidden: true, description: 'Removed in 1.1; accepted and ignored' },
  { flag: 'discoveryRefreshDelay', value: '<duration>', hidden: true, description: 'v1 polling interval, removed; accepted and ignored' },
  // Older Istio agents made readiness wait for inbound listeners on these ports; today's has no such flag.
  { flag: 'applicationPorts', value: '<ports>', hidden: true, description: 'Removed from Istio\'s agent (readiness no longer checks application ports); accepted and ignored' },
];

/** Flags kept for old command lines; the agent warns when they are given. */
export const ignoredFlags = ['availabilityZone', 'discoveryRefreshDelay', 'applicationPorts'] as const;

/** Istio flags accepted (so today's injected pods start) but not implemented; one warning each when given. */
export const unimplementedFlags = ['stsPort', 'outlierLogPath', 'tokenManagerPlugin', 'profiling', 'log_target', 'log_caller', 'log_stacktrace_level', 'log_rotate', 'log_rotate_max_age', 'log_rotate_max_backups', 'log_rotate_max_size'] as const;

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
