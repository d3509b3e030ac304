import type { Registry } from '../metrics/index.ts';
import type { Clock } from '../shared/clock.ts';
import type { Logger } from '../shared/log.ts';
import type { AgentConfig } from '../settings/proxy-settings.ts';
import type { FileRead } from '../watch/cert-set.ts';
import { resolve } from 'node:path';
import { certFilesIn } from '../shared/istio-files.ts';
import { feedCertDir } from './cert-dir-feed.ts';
import { FileSecretSources } from './file-sources.ts';
import { registerSdsMetrics } from './metrics.ts';
import { SdsServer } from './sds-server.ts';
import { SecretStore } from './secret-store.ts';
import { claimSdsSocket } from './socket.ts';

export interface SdsRuntime {
  /**
   * Where the certificate dir watch's consistent sets go, given what starts a
   * new epoch for a set Envoy must restart to see; restarts only what SDS cannot deliver.
   */
  certFeed(restart: (hash: string) => void): (hash: string, files: readonly FileRead[]) => void;
  /** What is served; undefined when another process serves the socket. A CA client feeds it. */
  store: SecretStore | undefined;
  debug(): unknown;
  stop(): Promise<void>;
}

export interface StartSdsOptions {
  config: AgentConfig;
  registry: Registry;
  clock: Clock;
  logger: Logger;
  /** The workload identity comes from a CA, not from `default`/`ROOTCA` files in --certDir. */
  workloadFromCa: boolean;
  /** OUTPUT_CERTS, where the CA's certificate is written: a --certDir there sees the agent's own writes. */
  outputDir?: string;
}

/**
 * Serves SDS on --sdsSocket, fed by the certificate files; or, when another
 * process already serves that socket (SPIRE), leaves it to that process and
 * hot-restarts on certificate changes as before.
 */
export async function startSds(options: StartSdsOptions): Promise<SdsRuntime> {
  const { config, logger, clock } = options;
  const store = new SecretStore();
  if ((await claimSdsSocket(config.sdsSocket)) === 'foreign') {
    logger.info({ socket: config.sdsSocket }, 'SDS socket is served by another process; Envoy reads its certificates there');
    const certFeed = (restart: (hash: string) => void) =>
      feedCertDir({ store, certDir: config.certDir, rotation: 'restart', coveredFiles: () => new Set(), restart, logger });
    return {
      certFeed,
      store: undefined,
      debug: () => ({ socket: config.sdsSocket, serving: false, servedBy: 'another process' }),
      stop: async () => undefined,
    };
  }
  const metrics = registerSdsMetrics(options.registry, store, () => clock.now());
  const sources = new FileSecretSources({ store, clock, logger, metrics, debounceMs: config.certDebounceMs, resyncMs: config.certResyncMs });
  const server = new SdsServer({ socketPath: config.sdsSocket, store, subscriptions: sources, metrics, logger, now: () => clock.now() });
  await server.start();
  const certFeed = (restart: (hash: string) => void) =>
    feedCertDir({
      store,
      certDir: config.certDir,
      rotation: config.certRotation,
      coveredFiles: () => server.coveredFiles(),
      restart,
      logger,
      storesWorkload: !options.workloadFromCa,
      ownFiles: options.outputDir === undefined ? undefined : new Set(Object.values(certFilesIn(resolve(options.outputDir)))),
    });
  return {
    certFeed,
    store,
    debug: () => server.debug(),
    stop: async () => {
      await server.stop();
      await sources.close();
    },
  };
}
