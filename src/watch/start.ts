import { access } from 'node:fs/promises';
import type { Clock } from '../shared/clock.ts';
import type { Logger } from '../shared/log.ts';
import type { AgentConfig } from '../settings/proxy-settings.ts';
import { watchedCertGroups } from './cert-files.ts';
import { CertWatch } from './cert-watch.ts';
import type { FileRead } from './cert-set.ts';
import { ChokidarSource } from './chokidar-source.ts';

export interface CertWatchContext {
  clock: Clock;
  logger: Logger;
  /** The CA client issues the workload certificate, so files in the dirs are optional. */
  caInUse: boolean;
}

/**
 * Watches the proxy's certificate dirs and reports every new consistent set's
 * hash (the first one right away). Resolves once watching.
 */
export async function startCertWatch(
  config: AgentConfig,
  context: CertWatchContext,
  onConfig: (hash: string, files: readonly FileRead[]) => void,
): Promise<CertWatch> {
  const { clock, logger } = context;
  const dirs = config.proxyType === 'ingress' ? [config.certDir, config.ingressCertDir] : [config.certDir];
  for (const dir of dirs) {
    const exists = await access(dir).then(
      () => true,
      () => false,
    );
    // With a CA the workload certificate comes from it: a missing dir is the normal case (a default pod), not worth a warning.
    if (!exists) logger[context.caInUse ? 'debug' : 'warn']({ dir }, 'certificate dir does not exist; running without its certificates until it appears');
  }
  const watch = new CertWatch({
    groups: watchedCertGroups(config.certDir, config.proxyType, config.ingressCertDir),
    source: new ChokidarSource(dirs),
    clock,
    logger,
    debounceMs: config.certDebounceMs,
    resyncMs: config.certResyncMs,
    onConfig,
  });
  await watch.start();
  return watch;
}
