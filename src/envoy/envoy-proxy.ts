import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import type { Proxy, ProxyExit, RunOptions } from '../agent/proxy.ts';
import { bootstrapExtension, removeBootstrap, writeBootstrap } from '../bootstrap/write.ts';
import type { Clock } from '../shared/clock.ts';
import { describe } from '../shared/errors.ts';
import type { Logger } from '../shared/log.ts';
import type { ProxyConfig } from '../shared/proxy-config.ts';
import { adminClient, serverInfo, type AdminClient } from './admin.ts';
import { buildEnvoyArgs } from './args.ts';
import { drainEnvoy } from './drain.ts';
import { forwardOutput, RecentErrors } from './output.ts';

export interface EnvoyProxyOptions {
  config: ProxyConfig;
  serviceNode: string;
  /** The rendered bootstrap; every epoch gets its own copy. */
  bootstrap: string;
  clock: Clock;
  logger: Logger;
  /** How long SIGTERM may take before SIGKILL. */
  killAfterMs?: number;
}

const parentInitializing = 'previous envoy process is still initializing';
const baseIdWaitMs = 10_000;

/** The real Envoy behind the agent's `Proxy` interface. */
export class EnvoyProxy implements Proxy {
  readonly #options: EnvoyProxyOptions;
  readonly #admin: AdminClient;
  readonly #baseIdPath: string;

  constructor(options: EnvoyProxyOptions) {
    this.#options = options;
    this.#admin = adminClient(options.config.proxyAdminPort);
    this.#baseIdPath = join(options.config.configPath, 'envoy-base-id');
  }

  async run(epoch: number, _config: string, options: RunOptions): Promise<ProxyExit> {
    try {
      return await this.#run(epoch, options);
    } catch (error) {
      return { kind: options.signal.aborted ? 'aborted' : 'failed', detail: describe(error) };
    }
  }

  async #run(epoch: number, { signal, onLive, onStarted }: RunOptions): Promise<ProxyExit> {
    const { config, logger } = this.#options;
    const bootstrapPath = await writeBootstrap(config.configPath, epoch, this.#options.bootstrap, bootstrapExtension(config.customConfigFile));
    const args = buildEnvoyArgs({
      bootstrapPath,
      epoch,
      baseId: await this.#baseIdFor(epoch, signal),
      baseIdPath: this.#baseIdPath,
      drainDurationMs: config.drainDurationMs,
      parentShutdownDurationMs: config.parentShutdownDurationMs,
      serviceCluster: config.serviceCluster,
      serviceNode: this.#options.serviceNode,
      logLevel: config.proxyLogLevel,
      componentLogLevel: config.proxyComponentLogLevel,
      concurrency: config.concurrency,
    });
    const epochLogger = logger.child({ epoch });
    // Own process group: a terminal's Ctrl-C reaches the agent only, which
    // then drains Envoy instead of Envoy dying at once.
    const child = execa(config.binaryPath, args, {
      reject: false,
      cancelSignal: signal,
      forceKillAfterDelay: this.#options.killAfterMs ?? 5000,
      detached: true,
      buffer: false,
      stdin: 'ignore',
    });
    epochLogger.info({ pid: child.pid, args }, 'envoy started');
    if (child.pid !== undefined) onStarted?.({ pid: child.pid });
    const recent = new RecentErrors();
    const output = Promise.all([forwardOutput(child.stdout!, epochLogger, recent), forwardOutput(child.stderr!, epochLogger, recent)]);
    const stopWatching = new AbortController();
    void this.#watchLive(epoch, AbortSignal.any([signal, stopWatching.signal]), onLive);
    const result = await child;
    stopWatching.abort();
    await output;
    return classifyExit(result, recent, signal.aborted);
  }

  /**
   * Epoch 0 lets Envoy pick a free base id (so agents side by side never
   * collide) and forgets any stale one; later epochs must reuse it, and may
   * start before epoch 0 has written it, so they wait for the file.
   */
  async #baseIdFor(epoch: number, signal: AbortSignal): Promise<number | undefined> {
    if (epoch === 0) {
      await rm(this.#baseIdPath, { force: true });
      return undefined;
    }
    for (let waited = 0; waited < baseIdWaitMs; waited += 50) {
      const text = (await readFile(this.#baseIdPath, 'utf8').catch(() => '')).trim();
      if (/^\d+$/.test(text)) return Number(text);
      await this.#options.clock.sleep(50, signal);
    }
    throw new Error(`${this.#baseIdPath}: epoch 0 never wrote its base id`);
  }

  /** Polls admin until this epoch reports LIVE. */
  async #watchLive(epoch: number, signal: AbortSignal, onLive: () => void): Promise<void> {
    while (!signal.aborted) {
      const info = await serverInfo(this.#admin, signal);
      if (info?.state === 'LIVE' && info.epoch === epoch) {
        if (!signal.aborted) onLive();
        return;
      }
      await this.#options.clock.sleep(100, signal).catch(() => undefined);
    }
  }

  drain(signal: AbortSignal): Promise<void> {
    const { config, clock, logger } = this.#options;
    return drainEnvoy({
      admin: this.#admin, clock, logger, signal,
      durationMs: config.terminationDrainDurationMs ?? config.drainDurationMs,
      inboundOnly: config.proxyType === 'sidecar',
      exitOnZeroActiveConnections: config.exitOnZeroActiveConnections,
      minDurationMs: config.minimumDrainDurationMs,
      ignoredPorts: [config.prometheusPort, config.readinessPort],
    });
  }

  cleanup(epoch: number): Promise<void> {
    return removeBootstrap(this.#options.config.configPath, epoch, bootstrapExtension(this.#options.config.customConfigFile));
  }
}

interface ChildResult {
  exitCode?: number;
  signal?: string;
  isCanceled: boolean;
  failed: boolean;
  code?: string;
}

/** Sorts an Envoy exit into the kinds the reconcile loop tells apart. */
export function classifyExit(result: ChildResult, recent: RecentErrors, aborted: boolean): ProxyExit {
  const how = result.signal ? `signal ${result.signal}` : result.code && result.exitCode === undefined ? result.code : `exit code ${result.exitCode}`;
  const detail = recent.toString() ? `${how}: ${recent}` : how;
  if (aborted || result.isCanceled) return { kind: 'aborted', detail };
  if (result.exitCode === 0) return { kind: 'normal', detail };
  if (recent.includes(parentInitializing)) return { kind: 'parent-initializing', detail };
  return { kind: 'failed', detail };
}
