import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Proxy, ProxyExit, RunOptions } from '../agent/proxy.ts';
import { bootstrapExtension, bootstrapsLeftIn, removeBootstrap, writeBootstrap } from '../bootstrap/write.ts';
import type { Clock } from '../shared/clock.ts';
import { describe } from '../shared/errors.ts';
import type { Logger } from '../shared/log.ts';
import type { AgentConfig } from '../settings/proxy-settings.ts';
import { adminClient, type AdminClient } from './admin.ts';
import { buildEnvoyArgs, validationArgs, type EnvoyLaunch } from './args.ts';
import { activeConnections } from './active-connections.ts';
import { drainListeners } from './drain.ts';
import { defaultKillAfterMs, runEnvoyProcess } from './envoy-process.ts';
import { watchLive } from './live.ts';
import { stopLeftoverEnvoys, type ProcView } from './leftovers.ts';
import { removeSharedMemory } from './shared-memory.ts';
import { StderrFifos, type StderrFifo } from './stderr-fifo.ts';
import { needsExplaining, planStartChecks, refusedAtStart, verdictExit } from './start-check.ts';
import { bootstrapVerdict, type Verdict } from './validate.ts';
import { groupsToCheck, writeCertCheck } from './cert-check.ts';
import { watchedCertGroups, type CertGroup } from '../watch/cert-files.ts';

/** A new epoch waits for CDS and LDS without a limit (initial_fetch_timeout 0s); an older epoch, if any, serves meanwhile. */
const waitingLine = 'epoch not LIVE yet: Envoy waits for its clusters and listeners from the discovery server; an older epoch, if any, keeps serving';

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
  /** Where epoch 0 looks for an earlier agent's Envoys (tests give a fake /proc). */
  procView?: ProcView;
  /** Where Envoy's stderr lines that are not its log go (an access log to /dev/stderr): the agent's stderr by default. */
  rawLine?: (line: string) => void;
}

const toStderr = (line: string) => void process.stderr.write(`${line}\n`);

const baseIdWaitMs = 10_000;
/** Epoch 0's `--mode validate` beside its Envoy (operator bootstraps): the lowest priority, it is off the path to ready. */
const validateNiceness = 19;
/** A check that could not run (it never should: bootstrapVerdict does not reject) does not block a start. */
const passed: Verdict = { accepted: true };

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
  /**
   * Whether an earlier agent left bootstraps on this --configPath, read before this one
   * writes any: only then does epoch 0 scan /proc for its Envoys (tens of ms where /proc
   * shows a whole host's processes, on the way to Envoy's spawn).
   */
  #earlierBootstraps: Promise<boolean> | undefined;
  /** The certificate groups the epoch that took over last was checked with. */
  #servingCerts: CertGroup[] = [];
  readonly #stderrFifos: StderrFifos;

  constructor(options: EnvoyProxyOptions) {
    this.#options = options;
    this.#stderrFifos = new StderrFifos(options.config.configPath, options.logger);
    this.#admin = adminClient(options.config.proxyAdminPort, { host: options.config.proxyAdminHost });
    this.#baseIdPath = join(options.config.configPath, 'envoy-base-id');
    this.#bootstrap = options.bootstrap;
  }

  /** Later epochs start with this bootstrap (the Delta→SotW fallback); running ones keep theirs. */
  useBootstrap(text: string): void {
    this.#bootstrap = text;
  }

  async run(epoch: number, _config: string, options: RunOptions): Promise<ProxyExit> {
    this.#running++;
    // Made while the checks run (a spawn of mkfifo), not after them on the way to Envoy's spawn.
    const stderr = this.#stderrFifos.open(epoch);
    try {
      return await this.#run(epoch, options, stderr);
    } catch (error) {
      return { kind: options.signal.aborted ? 'aborted' : 'failed', detail: describe(error) };
    } finally {
      void stderr.then((fifo) => fifo?.close());
      if (--this.#running === 0) await (this.#sharedMemoryRemoved = this.#removeSharedMemory());
    }
  }

  /** The start checks of start-check.ts around one epoch's process (envoy-process.ts). */
  async #run(epoch: number, { signal, onLive, onStarted }: RunOptions, stderr: Promise<StderrFifo | undefined>): Promise<ProxyExit> {
    const { config } = this.#options;
    this.#earlierBootstraps ??= bootstrapsLeftIn(config.configPath);
    await this.#earlierBootstraps;
    const bootstrapPath = await writeBootstrap(config.configPath, epoch, this.#bootstrap, bootstrapExtension(config.customConfigFile));
    const plan = planStartChecks(epoch, hasOperatorParts(config, this.#options.launch));
    const extraArgs = validationArgs(config, this.#options.launch);
    const before = plan.before ? verdictExit('before', epoch, await bootstrapVerdict(config.binaryPath, bootstrapPath, { extraArgs })) : undefined;
    if (before !== undefined) return before;
    const certs = await groupsToCheck(watchedCertGroups(config.certDir, config.proxyType, config.ingressCertDir), this.#servingCerts);
    const certRefusal = certs.length > 0 ? verdictExit('certs', epoch, await this.#checkCertificates(certs)) : undefined;
    if (certRefusal !== undefined) return certRefusal;
    // Stopped while being validated (shutdown): never spawn it.
    if (signal.aborted) return { kind: 'aborted', detail: 'stopped before it started' };
    let wentLive = false;
    const exit = await runEnvoyProcess({
      binaryPath: config.binaryPath,
      args: await this.#envoyArgs(epoch, bootstrapPath, signal),
      stderr: await stderr,
      rawLine: this.#options.rawLine ?? toStderr,
      signal,
      ports: config,
      killAfterMs: this.#options.killAfterMs ?? defaultKillAfterMs,
      logger: this.#options.logger.child({ epoch }),
      checkBeside: plan.beside
        ? () => bootstrapVerdict(config.binaryPath, bootstrapPath, { extraArgs, niceness: validateNiceness }).catch(() => passed)
        : undefined,
      watchLive: (watching, tell) => watchLive({
        admin: this.#admin, clock: this.#options.clock, bootstrapPath, signal: watching, onLive: tell,
        onWaiting: (waitedMs) => this.#options.logger.warn({ epoch, waitedMs }, waitingLine),
      }),
      onLive: (details) => ((wentLive = true), (this.#servingCerts = certs), onLive(details)),
      onSpawned: (pid) => (pid !== undefined && onStarted?.({ pid }), this.#options.onSpawn?.(epoch)),
    });
    return needsExplaining(plan, exit, wentLive) ? this.#explainFailedStart(exit, bootstrapPath, extraArgs) : exit;
  }

  /**
   * Epoch 0's Envoy ended before it went LIVE. A bootstrap Envoy refused,
   * in its own output or by `--mode validate` (which also finds a binary
   * that is not an Envoy), ends the agent with exit 2 and that reason; any
   * other end stands as it is (a failure is retried).
   */
  async #explainFailedStart(exit: ProxyExit, bootstrapPath: string, extraArgs: readonly string[]): Promise<ProxyExit> {
    const refused = refusedAtStart(exit, bootstrapPath);
    if (refused !== undefined) return refused;
    const verdict = await bootstrapVerdict(this.#options.config.binaryPath, bootstrapPath, { extraArgs }).catch(() => passed);
    return verdictExit('after', 0, verdict) ?? exit;
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

  /** Envoy's verdict on the certificate files (see cert-check.ts). */
  async #checkCertificates(groups: readonly CertGroup[]): Promise<Verdict> {
    const path = await writeCertCheck(this.#options.config.configPath, groups);
    try {
      return await bootstrapVerdict(this.#options.config.binaryPath, path);
    } finally {
      await rm(path, { force: true });
    }
  }

  /** An Envoy an earlier agent left on this --configPath would hold the admin port and the shared memory: it goes first. */
  async #stopLeftovers(): Promise<void> {
    const { configPath, binaryPath } = this.#options.config;
    const killed = await stopLeftoverEnvoys({ configPath, binaryPath }, this.#options.clock, this.#options.procView);
    for (const { pid, exe } of killed) this.#options.logger.warn({ pid, exe, configPath }, 'stopped an Envoy an earlier agent left running');
  }

  async #removeSharedMemory(): Promise<void> {
    const path = await removeSharedMemory(this.#baseIdPath).catch(
      (err: unknown) => void this.#options.logger.warn({ err }, 'cannot remove Envoy shared memory'),
    );
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
      if (await this.#earlierBootstraps) await this.#stopLeftovers();
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

  drain(options: { signal: AbortSignal; skipExit?: boolean }): Promise<boolean> {
    const { config, logger } = this.#options;
    return drainListeners({ admin: this.#admin, logger, signal: options.signal, inboundOnly: config.proxyType === 'sidecar', skipExit: options.skipExit });
  }

  activeConnections(signal: AbortSignal): Promise<number | undefined> {
    const { config } = this.#options;
    return activeConnections(this.#admin, [config.prometheusPort, config.readinessPort], signal);
  }

  cleanup(epoch: number): Promise<void> {
    return removeBootstrap(this.#options.config.configPath, epoch, bootstrapExtension(this.#options.config.customConfigFile));
  }
}
