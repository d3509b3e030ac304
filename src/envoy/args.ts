import { isIP } from 'node:net';
import { toWholeSeconds } from '../shared/duration.ts';

export interface EnvoyArgsInput {
  bootstrapPath: string;
  epoch: number;
  /** The base id shared by every epoch of this agent; undefined lets Envoy pick a free one. */
  baseId?: number;
  /** Where Envoy writes the base id it picked (used with a dynamic base id). */
  baseIdPath: string;
  drainDurationMs: number;
  parentShutdownDurationMs: number;
  serviceCluster: string;
  serviceNode: string;
  logLevel: string;
  componentLogLevel: string;
  concurrency: number;
  /** How often Envoy flushes access log files (ProxyConfig fileFlushInterval). */
  fileFlushIntervalMs: number;
  skipDeprecatedLogs: boolean;
  /** What the agent works out at start, beyond its settings. */
  launch: EnvoyLaunch;
}

/** Envoy flags that depend on the pod, worked out once before the first epoch. */
export interface EnvoyLaunch {
  /** v6 when every IP of the node is IPv6: Envoy's own upstream connections then bind IPv6. */
  localAddressIpVersion: 'v4' | 'v6';
  /** ISTIO_BOOTSTRAP_OVERRIDE as JSON, merged over the bootstrap by Envoy. */
  configYaml?: string;
  /** ISTIO_ENVOY_ENABLE_CORE_DUMP: Envoy's --enable-core-dump, as Istio's agent passes it. */
  enableCoreDump?: boolean;
  /** ProxyConfig fileFlushMinSizeKb: access logs buffer this much before a flush (with the interval). */
  fileFlushMinSizeKb?: number;
}

/**
 * Istio's rule: an IPv6-only pod (every node IP is IPv6) makes Envoy's local addresses IPv6.
 * isIP, not isIPv6: it tries Node's IPv4 pattern first, and an IPv4 address then never runs
 * the IPv6 one, whose first run compiles it (CPU before Envoy's spawn).
 */
export function localAddressIpVersion(nodeIps: readonly string[]): 'v4' | 'v6' {
  return nodeIps.length > 0 && nodeIps.every((ip) => isIP(ip) === 6) ? 'v6' : 'v4';
}

/**
 * Envoy's command line for one epoch. Every start is a hot restart, so
 * epoch N > 0 must reuse the base id epoch 0 picked.
 */
export function buildEnvoyArgs(input: EnvoyArgsInput): string[] {
  const args = [
    '-c', input.bootstrapPath,
    '--restart-epoch', String(input.epoch),
    ...baseIdArgs(input),
    '--drain-time-s', String(toWholeSeconds(input.drainDurationMs)),
    '--parent-shutdown-time-s', String(toWholeSeconds(input.parentShutdownDurationMs)),
    '--drain-strategy', 'immediate',
    '--service-cluster', input.serviceCluster,
    '--service-node', input.serviceNode,
    '--local-address-ip-version', input.launch.localAddressIpVersion,
    // Envoy's default is 10s: access logs would show up that late. Istio flushes every second.
    '--file-flush-interval-msec', String(Math.max(1, Math.round(input.fileFlushIntervalMs))),
    '--allow-unknown-static-fields',
    '-l', envoyLogLevel(input.logLevel),
    ...(input.skipDeprecatedLogs ? ['--skip-deprecated-logs'] : []),
    ...(input.launch.enableCoreDump ? ['--enable-core-dump'] : []),
    ...(input.launch.fileFlushMinSizeKb ? ['--file-flush-min-size-kb', String(input.launch.fileFlushMinSizeKb)] : []),
  ];
  return [...args, ...validationArgs({ proxyComponentLogLevel: input.componentLogLevel, concurrency: input.concurrency }, input.launch)];
}

function baseIdArgs(input: EnvoyArgsInput): string[] {
  if (input.baseId !== undefined) return ['--base-id', String(input.baseId)];
  return ['--use-dynamic-base-id', '--base-id-path', input.baseIdPath];
}

/** Envoy spells it `warning`; accept the shorter `warn` too. */
function envoyLogLevel(level: string): string {
  return level === 'warn' ? 'warning' : level;
}

/**
 * The flags `--mode validate` must see too: an unknown log component fails
 * there, before any start, and so does an override Envoy cannot merge.
 */
export function validationArgs(config: { proxyComponentLogLevel: string; concurrency: number }, launch?: EnvoyLaunch): string[] {
  const args: string[] = [];
  if (launch?.configYaml !== undefined) args.push('--config-yaml', launch.configYaml);
  if (config.proxyComponentLogLevel) args.push('--component-log-level', config.proxyComponentLogLevel);
  if (config.concurrency > 0) args.push('--concurrency', String(config.concurrency));
  return args;
}
