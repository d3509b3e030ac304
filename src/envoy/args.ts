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
}

/**
 * Envoy 1.40's command line for one epoch. Every start is a hot restart, so
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
    '--local-address-ip-version', 'v4',
    '--allow-unknown-static-fields',
    '-l', envoyLogLevel(input.logLevel),
  ];
  return [...args, ...validationArgs({ proxyComponentLogLevel: input.componentLogLevel, concurrency: input.concurrency })];
}

function baseIdArgs(input: EnvoyArgsInput): string[] {
  if (input.baseId !== undefined) return ['--base-id', String(input.baseId)];
  return ['--use-dynamic-base-id', '--base-id-path', input.baseIdPath];
}

/** Envoy spells it `warning`; accept the shorter `warn` too. */
function envoyLogLevel(level: string): string {
  return level === 'warn' ? 'warning' : level;
}

/** The flags `--mode validate` must see too: an unknown log component fails there, before any start. */
export function validationArgs(config: { proxyComponentLogLevel: string; concurrency: number }): string[] {
  const args: string[] = [];
  if (config.proxyComponentLogLevel) args.push('--component-log-level', config.proxyComponentLogLevel);
  if (config.concurrency > 0) args.push('--concurrency', String(config.concurrency));
  return args;
}
