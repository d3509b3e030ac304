import type { Logger } from '../../shared/log.ts';
import type { AppProbe } from './config.ts';
import { runProbe, type ProbeVerdict } from './probe.ts';

export const appHealthPrefix = '/app-health/';

/**
 * Answers /app-health/<container>/<probe> from the configured probes only:
 * the request picks a probe by its exact path, never a target, so nothing on
 * the pod network can make the agent connect anywhere else. Unknown: 404.
 */
export function appHealth(probes: ReadonlyMap<string, AppProbe>, logger: Logger) {
  return async (path: string, signal?: AbortSignal): Promise<ProbeVerdict> => {
    const probe = probes.get(path);
    if (!probe) return { status: 404, reason: `no app probe configured for ${path}` };
    const verdict = await runProbe(probe, signal);
    if (verdict.status >= 400) logger.info({ path, status: verdict.status, reason: verdict.reason }, 'app probe failed');
    return verdict;
  };
}
