import type { Registry } from '../metrics/index.ts';
import type { Clock } from '../shared/clock.ts';
import type { Logger } from '../shared/log.ts';
import type { AgentConfig } from '../settings/proxy-settings.ts';
import { FileSecretSources } from './file-sources.ts';
import { registerSdsMetrics } from './metrics.ts';
import { SdsServer } from './sds-server.ts';
import { SecretStore } from './secret-store.ts';
import { claimSdsSocket } from './socket.ts';

export interface SdsRuntime {
  /** What is served; undefined when another process serves the socket. The rotation owner (runtime/rotation.ts) feeds it. */
  store: SecretStore | undefined;
  /** Files whose bytes some SDS stream holds now: a change to them reaches Envoy without a restart. */
  coveredFiles(): ReadonlySet<string>;
  debug(): unknown;
  stop(): Promise<void>;
}

export interface StartSdsOptions {
  config: AgentConfig;
  registry: Registry;
  clock: Clock;
  logger: Logger;
}

/**
 * Serves SDS on --sdsSocket, from the secret store; or, when another process
 * already serves that socket (SPIRE), leaves it to that process.
 */
export async function startSds(options: StartSdsOptions): Promise<SdsRuntime> {
  const { config, logger, clock } = options;
  if ((await claimSdsSocket(config.sdsSocket)) === 'foreign') {
    logger.info({ socket: config.sdsSocket }, 'SDS socket is served by another process; Envoy reads its certificates there');
    return {
      store: undefined,
      coveredFiles: () => new Set(),
      debug: () => ({ socket: config.sdsSocket, serving: false, servedBy: 'another process' }),
      stop: async () => undefined,
    };
  }
  const store = new SecretStore();
  const metrics = registerSdsMetrics(options.registry, store, () => clock.now());
  const sources = new FileSecretSources({ store, clock, logger, metrics, debounceMs: config.certDebounceMs, resyncMs: config.certResyncMs });
  const server = new SdsServer({ socketPath: config.sdsSocket, store, subscriptions: sources, metrics, logger, now: () => clock.now() });
  await server.start();
  return {
    store,
    coveredFiles: () => server.coveredFiles(),
    debug: () => server.debug(),
    stop: async () => {
      await server.stop();
      await sources.close();
    },
  };
}
