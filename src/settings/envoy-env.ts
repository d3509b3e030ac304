import { declareEnvSettings, readEnvSettings } from './env-settings.ts';
import { maxConcurrency } from './parse-values.ts';

/** Env-only settings of Envoy's command line, under Istio's names. */
export const envoyEnv = declareEnvSettings({
  cpuLimit: {
    env: 'ISTIO_CPU_LIMIT',
    default: '0',
    parse: (text) => cpuCount(text),
    description: `The container's CPU limit (Istio's injection template sets it from limits.cpu; ours passes --concurrency instead); Envoy's worker ` +
      `threads (--concurrency) when neither --concurrency nor ProxyConfig concurrency is set, rounded up, at most ${maxConcurrency}; 0: no limit`,
  },
});

/**
 * Whole CPUs, rounded up as Kubernetes rounds limits.cpu for divisor 1:
 * `2`, also `1.5` (2) and `500m` (1) when set by hand.
 */
function cpuCount(text: string): number {
  const match = /^(\d+(?:\.\d+)?|\.\d+)(m?)$/.exec(text.trim());
  if (!match) throw new Error(`"${text}" is not a CPU count (e.g. 2, 1.5 or 500m)`);
  const cpus = Number(match[1]) / (match[2] ? 1000 : 1);
  // More workers than this only cost memory (see maxConcurrency): a limit past it is clamped, not refused.
  return Math.min(Math.ceil(cpus), maxConcurrency);
}

/**
 * Istio's rule (pilot-agent's config.go): the CPU limit decides the worker
 * count only when the command line and ProxyConfig leave it unset, so a pod
 * on a 64-core node with a 2-CPU limit runs 2 workers, not 64.
 */
export function concurrencyFromCpuLimit(options: { env: NodeJS.ProcessEnv; setElsewhere: boolean }): number | undefined {
  if (options.setElsewhere) return undefined;
  const { cpuLimit } = readEnvSettings(options.env, envoyEnv);
  return cpuLimit > 0 ? cpuLimit : undefined;
}
