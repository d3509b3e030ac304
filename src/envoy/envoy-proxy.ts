import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import type { LiveDetails, Proxy, ProxyExit, RunOptions } from '../agent/proxy.ts';
import { bootstrapExtension, removeBootstrap, writeBootstrap } from '../bootstrap/write.ts';
import type { Clock } from '../shared/clock.ts';
import { describe } from '../shared/errors.ts';
import type { Logger } from '../shared/log.ts';
import type { AgentConfig } from '../settings/proxy-settings.ts';
import { adminClient, isLive, serverInfo, type AdminClient } from './admin.ts';
import { buildEnvoyArgs, validationArgs, type EnvoyLaunch } from './args.ts';
import { drainEnvoy, drainListeners } from './drain.ts';
import { classifyExit, configRefusal } from './exit.ts';
import { forwardOutput, RecentErrors } from './output.ts';
import { stopLeftoverEnvoys } from './leftovers.ts';
import { removeSharedMemory } from './shared-memory.ts';
import { bootstrapRejected, bootstrapRejection, rejectionMessage } from './validate.ts';
import { groupsToCheck, writeCertCheck } from './cert-check.ts';
import { watchedCertGroups, type CertGroup } from '../watch/cert-files.ts';

export interface EnvoyProxyOptions {
  config: AgentConfig;
  serviceNode: string;
  /** The rendered bootstrap; every epoch gets its own copy. */
  bootstrap: string;
  clock: Clock;
  logger: Logger;
  /** How long SIGTERM may take before SIGKILL. */
  killAfterMs?: number;
  /** Flags worked out at start (IPv6 local addresses, the bootstrap override); IPv4 and none when absent. */
  launch?: EnvoyLaunch;
  /** Told when an epoch's Envoy process has been spawned. */
  onSpawn?: (epoch: number) => void;
}

const baseIdWaitMs = 10_000;
/** Epoch 0's `--mode validate` beside its Envoy (operator bootstraps): the lowest priority, it is off the path to ready. */
const validateNiceness = 19;

/** Whether the bootstrap holds what the operator wrote: a custom bootstrap, a template of theirs, or an override merged in. */
function hasOperatorParts(config: AgentConfig, launch: EnvoyLaunch | undefined): boolean {
  return Boolean(config.customConfigFile || config.templateFile || launch?.configYaml);
}

/** The real Envoy behind the agent's `Proxy` interface. */
export class EnvoyProxy implements Proxy {
  readonly #options: EnvoyProxyOptions;
  readonly #admin: AdminClient;
  readonly #baseIdPath: string;
  /** Epochs whose process may be running; at 0 the chain's shared memory goes. */
  #running = 0;
  #sharedMemoryRemoved: Promise<void> = Promise.resolve();
  /** What the next epoch starts with (useBootstrap swaps it). */
  #bootstrap: string;
  /** The certificate groups the epoch that took over last was checked with. */
  #servingCerts: CertGroup[] = [];

  constructor(options: EnvoyProxyOptions) {
    this.#options = options;
    this.#admin = adminClient(options.config.proxyAdminPort);
    this.#baseIdPath = join(options.config.configPath, 'envoy-base-id');
    this.#bootstrap = options.bootstrap;
  }

  /** Later epochs start with this bootstrap (the Delta→SotW fallback); running ones keep theirs. */
  useBootstrap(text: string): void {
    this.#bootstrap = text;
  }

  async run(epoch: number, _config: string, options: RunOptions): Promise<ProxyExit> {
    this.#running++;
    try {
      return await this.#run(epoch, options);
    } catch (error) {
      return { kind: options.signal.aborted ? 'aborted' : 'failed', detail: describe(error) };
    } finally {
      if (--this.#running === 0) await (this.#sharedMemoryRemoved = this.#removeSharedMemory());
    }
  }

  async #run(epoch: number, { signal, onLive, onStarted }: RunOptions): Promise<ProxyExit> {
    const { config } = this.#options;
    const bootstrapPath = await writeBootstrap(config.configPath, epoch, this.#bootstrap, bootstrapExtension(config.customConfigFile));
    // A hot-restart child that fails its start harms its parent (see
    // validate.ts): it is validated first. Epoch 0 has no parent to protect,
    // so Envoy starts at once. A bootstrap with the operator's own parts in
    // it (a custom bootstrap, template or override) is validated beside it,
    // niced and off the path to ready, and that verdict decides: validation
    // is stricter than a start (Envoy 1.40 serves with an unknown enum value
    // that `--mode validate` refuses). The agent's own rendering of its
    // built-in template is validated only when Envoy fails before LIVE, to
    // tell a rejected bootstrap (exit 2) from a start a retry may pass: a
    // validation beside every pod's start cost ~43 ms of Envoy's CPU, on a
    // node where pods start together and wait for CPU.
    const extraArgs = validationArgs(config, this.#options.launch);
    const besideStart = epoch === 0 && hasOperatorParts(config, this.#options.launch);
    const validate = besideStart ? () => rejectionMessage(config.binaryPath, bootstrapPath, { extraArgs, niceness: validateNiceness }).catch(() => undefined) : undefined;
    const rejection = epoch > 0 ? await bootstrapRejection(config.binaryPath, bootstrapPath, extraArgs) : undefined;
    if (rejection !== undefined) return { kind: 'rejected', detail: `Envoy rejects the bootstrap of epoch ${epoch}: ${rejection}` };
    const certs = await groupsToCheck(watchedCertGroups(config.certDir, config.proxyType, config.ingressCertDir), this.#servingCerts);
    const certRejection = certs.length > 0 ? await this.#checkCertificates(certs) : undefined;
    if (certRejection !== undefined) return { kind: 'rejected', detail: `Envoy cannot load the certificate files for epoch ${epoch}: ${certRejection}` };
    // Stopped while being validated (shutdown): never spawn it.
    if (signal.aborted) return { kind: 'aborted', detail: 'stopped before it started' };
    let wentLive = false;
    const tookOver = (details: LiveDetails) => ((wentLive = true), (this.#servingCerts = certs), onLive(details));
    const exit = await this.#spawn({ epoch, bootstrapPath, signal, validate, onStarted, onLive: tookOver });
    // An exit before LIVE, even a clean one (`/bin/true` as --binaryPath), is a start that did not take.
    const startFailed = (exit.kind === 'failed' || exit.kind === 'normal') && !wentLive;
    return epoch === 0 && !besideStart && startFailed ? this.#explainFailedStart(exit, bootstrapPath, extraArgs) : exit;
  }

  /**
   * Epoch 0's Envoy ended before it went LIVE. A bootstrap Envoy refused,
   * in its own output or by `--mode validate` (which also finds a binary
   * that is not an Envoy), ends the agent with exit 2 and that reason; any
   * other end stands as it is (a failure is retried).
   */
  async #explainFailedStart(exit: ProxyExit, bootstrapPath: string, extraArgs: readonly string[]): Promise<ProxyExit> {
    const refused = configRefusal(exit.detail);
    if (refused !== undefined) return { kind: 'rejected', detail: bootstrapRejected(bootstrapPath, refused) };
    const rejection = await rejectionMessage(this.#options.config.binaryPath, bootstrapPath, { extraArgs }).catch(() => undefined);
    return rejection === undefined ? exit : { kind: 'rejected', detail: rejection };
  }

  /**
   * Runs one epoch's Envoy to its end. `validate` (epoch 0), run once Envoy
   * is spawned: a rejection stops Envoy and is what the epoch ends with;
   * LIVE counts only once the bootstrap passed.
   */
  async #spawn(options: { epoch: number; bootstrapPath: string; signal: AbortSignal; validate: (() => Promise<string | undefined>) | undefined; onStarted: RunOptions['onStarted']; onLive: (details: LiveDetails) => void }): Promise<ProxyExit> {
    const { epoch, bootstrapPath, signal } = options;
    const { config, logger } = this.#options;
    const rejected = new AbortController();
    const args = await this.#envoyArgs(epoch, bootstrapPath, signal);
    const epochLogger = logger.child({ epoch });
    // Own process group: a terminal's Ctrl-C reaches the agent only, which
    // then drains Envoy instead of Envoy dying at once.
    // Envoy is detached, so execa's `cleanup` does not apply: an agent that
    // dies takes Envoy with it through PR_SET_PDEATHSIG, which Envoy sets.
    const child = execa(config.binaryPath, args, {
      reject: false,
      cancelSignal: AbortSignal.any([signal, rejected.signal]),
      forceKillAfterDelay: this.#options.killAfterMs ?? 5000,
      detached: true,
      stdin: 'ignore',
      // Nothing is kept: each line goes to the log as it comes (forwardOutput).
      // stdout and stderr are read apart: execa's `all` (one merged stream)
      // cost ~3 ms more of the agent's CPU per spawn.
      buffer: false,
    });
    const verdict = options.validate?.();
    void verdict?.then((reason) => reason !== undefined && rejected.abort());
    epochLogger.info({ envoyPid: child.pid, args }, 'envoy started');
    if (child.pid !== undefined) options.onStarted?.({ pid: child.pid });
    this.#options.onSpawn?.(epoch);
    const recent = new RecentErrors();
    const output = Promise.all([forwardOutput(child.iterable({ from: 'stdout' }), epochLogger, recent), forwardOutput(child.iterable({ from: 'stderr' }), epochLogger, recent)]);
    const stopWatching = new AbortController();
    const onLive = async (details: LiveDetails) => (await verdict) === undefined && options.onLive(details);
    void this.#watchLive(bootstrapPath, AbortSignal.any([signal, stopWatching.signal]), (details) => void onLive(details));
    const result = await child;
    stopWatching.abort();
    await output;
    const reason = await verdict;
    return reason !== undefined ? { kind: 'rejected', detail: reason } : classifyExit(result, recent, signal.aborted, config);
  }

  async #envoyArgs(epoch: number, bootstrapPath: string, signal: AbortSignal): Promise<string[]> {
    const { config } = this.#options;
    return buildEnvoyArgs({
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
      fileFlushIntervalMs: config.fileFlushIntervalMs,
      skipDeprecatedLogs: config.skipDeprecatedLogs,
      launch: this.#options.launch ?? { localAddressIpVersion: 'v4' },
    });
  }

  /** Envoy's verdict on the certificate files (see cert-check.ts); undefined when it can load them. */
  async #checkCertificates(groups: readonly CertGroup[]): Promise<string | undefined> {
    const path = await writeCertCheck(this.#options.config.configPath, groups);
    try {
      return await bootstrapRejection(this.#options.config.binaryPath, path);
    } finally {
      await rm(path, { force: true });
    }
  }

  /** An Envoy an earlier agent left on this --configPath would hold the admin port and the shared memory: it goes first. */
  async #stopLeftovers(): Promise<void> {
    const pids = await stopLeftoverEnvoys(this.#options.config.configPath, this.#options.clock);
    if (pids.length > 0) this.#options.logger.warn({ pids, configPath: this.#options.config.configPath }, 'stopped an Envoy an earlier agent left running');
  }

  async #removeSharedMemory(): Promise<void> {
    const path = await removeSharedMemory(this.#baseIdPath).catch((err: unknown) => void this.#options.logger.warn({ err }, 'cannot remove Envoy shared memory'));
    if (path) this.#options.logger.debug({ path }, 'removed Envoy shared memory');
  }

  /**
   * Epoch 0 lets Envoy pick a free base id (so agents side by side never
   * collide) and forgets any stale one; later epochs must reuse it, and may
   * start before epoch 0 has written it, so they wait for the file.
   */
  async #baseIdFor(epoch: number, signal: AbortSignal): Promise<number | undefined> {
    if (epoch === 0) {
      // The previous chain's shared memory is found through this file; so is
      // that of an agent SIGKILLed before it could clean up (same configPath
      // after a container restart, same /dev/shm in the pod).
      await this.#sharedMemoryRemoved;
      await this.#stopLeftovers();
      await this.#removeSharedMemory();
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

  /**
   * Polls admin until this epoch's own Envoy reports LIVE. Whatever answers
   * on the admin port must prove it: its config path is this epoch's
   * bootstrap, which no other agent's Envoy, nor another epoch, runs with.
   * The poll asks `/ready` (5 bytes) and only once it says LIVE
   * `/server_info` (~120 KB: ~1.8 ms of Envoy's CPU and ~0.7 ms of the
   * agent's per call, against ~0.15 and ~0.3 for /ready): a node of pods
   * starting together is CPU-bound, and this runs every 100 ms until LIVE.
   */
  async #watchLive(bootstrapPath: string, signal: AbortSignal, onLive: (details: LiveDetails) => void): Promise<void> {
    while (!signal.aborted) {
      const live = await isLive(this.#admin, signal);
      const info = live ? await serverInfo(this.#admin, signal) : undefined;
      if (info?.state === 'LIVE' && info.configPath === bootstrapPath) {
        if (!signal.aborted) onLive({ envoyVersion: info.version });
        return;
      }
      await this.#options.clock.sleep(100, signal).catch(() => undefined);
    }
  }

  async drain(signal: AbortSignal): Promise<void> {
    const { config, clock, logger } = this.#options;
    await drainEnvoy({
      admin: this.#admin, clock, logger, signal,
      durationMs: config.terminationDrainDurationMs,
      inboundOnly: config.proxyType === 'sidecar',
      exitOnZeroActiveConnections: config.exitOnZeroActiveConnections,
      minDurationMs: config.minimumDrainDurationMs,
      ignoredPorts: [config.prometheusPort, config.readinessPort],
    });
  }

  drainListeners(signal: AbortSignal, options: { skipExit?: boolean } = {}): Promise<boolean> {
    const { config, logger } = this.#options;
    return drainListeners({ admin: this.#admin, logger, signal, inboundOnly: config.proxyType === 'sidecar', skipExit: options.skipExit });
  }

  cleanup(epoch: number): Promise<void> {
    return removeBootstrap(this.#options.config.configPath, epoch, bootstrapExtension(this.#options.config.customConfigFile));
  }
}
