import type { Logger } from '../../shared/log.ts';
import type { AppProbe } from './config.ts';
import { probeRunner, type ProbeVerdict } from './probe.ts';
import type { ProbeNetwork } from './probe-target.ts';

export const appHealthPrefix = '/app-health/';
export const appLifecyclePrefix = '/app-lifecycle/';

/**
 * Answers /app-health/<container>/<probe> and /app-lifecycle/<container>/<hook>
 * from the configured probes only: the request picks a probe by its exact
 * path, never a target, so nothing on the pod network can make the agent
 * connect anywhere else. Unknown: 404.
 */
export function appHealth(probes: ReadonlyMap<string, AppProbe>, network: ProbeNetwork, logger: Logger) {
  const runners = new Map([...probes].map(([path, probe]) => [path, probeRunner(probe, network)]));
  return async (path: string, signal?: AbortSignal): Promise<ProbeVerdict> => {
    const run = runners.get(path);
    if (!run) return { status: 404, reason: `no app probe configured for ${path}` };
    const verdict = await run(signal);
    if (verdict.status >= 400) logger.info({ path, status: verdict.status, reason: verdict.reason }, 'app probe failed');
    return verdict;
  };
}
