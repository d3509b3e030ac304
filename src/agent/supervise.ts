/**
 * Envoy's supervision: starts the agent's parts in the order they depend on
 * each other, runs the reconcile loop until a signal, a fault or Envoy's own
 * end, and stops every part that started in reverse order, once, on every
 * way out: one disposable stack.
 */
import type { CaSettings } from '../ca/ca-settings.ts';
import type { CaRuntime } from '../ca/start.ts';
import type { DnsRuntime } from '../dns/start.ts';
import type { EnvoyLaunch } from '../envoy/args.ts';
import { EnvoyProxy } from '../envoy/envoy-proxy.ts';
import { buildGrpcBootstrap, writeGrpcBootstrap } from '../grpcxds/bootstrap.ts';
import { Registry } from '../metrics/index.ts';
import type { NodeMetadata } from '../role/metadata.ts';
import { startSds } from '../sds/start.ts';
import type { EnvValues } from '../settings/env-settings.ts';
import type { AgentConfig } from '../settings/proxy-settings.ts';
import type { wasmEnv } from '../settings/wasm-env.ts';
import { systemClock } from '../shared/clock.ts';
import { AgentError } from '../shared/errors.ts';
import { certFilesIn } from '../shared/istio-files.ts';
import type { Logger } from '../shared/log.ts';
import { EpochTracker } from '../status/epochs.ts';
import { countAgentEvents, registerAgentMetrics, registerStateGauges } from '../status/metrics.ts';
import { startStatus, type StartStatusOptions } from '../status/status.ts';
import { startWasmLoader } from '../wasm/start.ts';
import { readCertNotAfter } from '../watch/cert-set.ts';
import { startCertWatch } from '../watch/start.ts';
import { loadLastKnownGoodConfig } from '../xds/last-known-good/file.ts';
import { XdsRelay, type XdsRelayOptions } from '../xds/relay/relay.ts';
import { Agent } from './agent.ts';
import { shuttingDown } from './reconcile-types.ts';
import { defaultExpiryMarginMs, RestartGate } from './restart-gate.ts';
import { startCaWhenNeeded, startDnsWhenOn, withCaDebug, type DnsInputs } from './supervise-parts.ts';

/** The process-level hooks (the CLI's process guard): signals and faults reach the loop only while registered. */
export interface ProcessHooks {
  /** A terminating signal calls `handler` (drain, then exit) instead of exiting at once; returns the undo. */
  onTerminate(handler: (signal: NodeJS.Signals) => void): () => void;
  /** A fault runs `stop` (Envoy down) before the process exits 1; returns the undo. */
  whileRunning(stop: () => Promise<void>): () => void;
}

export interface SuperviseOptions {
  config: AgentConfig;
  bootstrap: { nodeId: string; metadata: NodeMetadata; text: string; domain: string; renderSotw?: () => Promise<string> };
  launch: EnvoyLaunch;
  /** Envoy reaches the relay (xds) and the status server's readiness (readiness) on these sockets. */
  sockets: { xds: string; readiness: string };
  /** Where and how the relay reaches the discovery server. */
  upstream: XdsRelayOptions['upstream'];
  caSettings: CaSettings | undefined;
  app: StartStatusOptions['app'];
  grpcBootstrapPath: string | undefined;
  dns: DnsInputs;
  wasm: EnvValues<typeof wasmEnv>;
  guard: ProcessHooks;
  logger: Logger;
}

/** Restart after failures: --retryInitialDelay × 2^n, --retryBudget tries; refilled after a minute LIVE. */
const retryPolicy = (config: AgentConfig) => ({ initialDelayMs: config.retryInitialDelayMs, budget: config.retryBudget, stableAfterMs: 60_000, parentInitializingDelayMs: 1000 });

/** Runs Envoy until a signal, a fault or its own end; resolves the exit code (throws for a failed run). */
export async function superviseEnvoy(options: SuperviseOptions): Promise<number> {
  const { config, bootstrap, logger } = options;
  await using stack = new AsyncDisposableStack();
  // Undone last: a fault waits for every step below (sockets removed, the last-known-good config written) before the process exits 1.
  let allClosed!: () => void;
  const closed = new Promise<void>((resolve) => (allClosed = resolve));
  stack.defer(() => allClosed());
  const registry = new Registry();
  // First: a DNS_PROXY_ADDR it cannot bind is bad input, and nothing else has started yet.
  const dns = await startDnsWhenOn(config, { ...options.dns, domain: bootstrap.domain, node: bootstrap.nodeId, registry, logger });
  if (dns) stack.defer(() => dns.stop());
  const sds = await startSds({ config, registry, clock: systemClock, logger: logger.child({ component: 'sds' }), workloadFromCa: options.caSettings !== undefined });
  stack.defer(() => sds.stop());
  // The CA's first call waits for Envoy's first spawn (resolved by the EnvoyProxy below).
  let envoySpawned!: () => void;
  const firstSpawn = new Promise<void>((resolve) => (envoySpawned = resolve));
  const ca = await startCaWhenNeeded({ sds, caSettings: options.caSettings, registry, logger, firstCallAfter: firstSpawn });
  if (ca) stack.defer(() => ca.stop());
  const relay = await startRelay(stack, { options, registry, ca, dns });
  // A proxyless gRPC app beside Envoy reaches istiod through the same relay.
  if (options.grpcBootstrapPath) await writeGrpcBootstrap(options.grpcBootstrapPath, buildGrpcBootstrap({ xdsSocketPath: options.sockets.xds, nodeId: bootstrap.nodeId, metadata: bootstrap.metadata, certDir: options.caSettings?.outputDir }));
  const xds = { mode: config.deltaXds ? 'delta' as const : 'sotw' as const, configSuffix: '' };
  // While Envoy boots (~60 ms), the relay dials for its first stream (a custom bootstrap may not use the relay at all).
  const predial = () => {
    if (!config.customConfigFile) relay.predial(xds.mode);
  };
  const { agent, epochs, envoyProxy } = startAgent(stack, { options, registry, onSpawn: () => (envoySpawned(), predial()) });
  stack.defer(fallBackToSotw({ relay, agent, envoyProxy, xds, render: options.bootstrap.renderSotw, logger }));
  const gate = new RestartGate({
    xds: relay, clock: systemClock, dispatch: (event) => agent.dispatch(event), state: () => agent.state,
    readNotAfter: () => readCertNotAfter(certFilesIn(config.certDir).chain), expiryMarginMs: defaultExpiryMarginMs,
  });
  gate.start();
  stack.defer(() => gate.stop());
  const status = await startStatus({
    port: config.statusPort, readinessSocketPath: options.sockets.readiness, adminPort: config.proxyAdminPort, inboundOnly: config.proxyType === 'sidecar',
    agent, epochs, registry, xds: relay, sds: withCaDebug(sds, ca), certificateProblem: () => ca?.problem() ?? dns?.problem(), app: options.app, dns, clock: systemClock, logger: logger.child({ component: 'status' }),
  });
  if (status) stack.defer(() => status.close());
  hookProcess(stack, { guard: options.guard, agent, closed, logger });
  // Last: the first certificate set starts Envoy, and everything it talks to is up by now.
  const restart = (hash: string) => {
    gate.certsChanged(hash);
    agent.dispatch({ type: 'config-changed', config: hash + xds.configSuffix });
  };
  const certs = await startCertWatch(config, { clock: systemClock, logger: logger.child({ component: 'certs' }), caInUse: Boolean(options.caSettings) }, sds.certFeed(restart));
  stack.defer(() => certs.close());
  const exit = await agent.exited;
  // The CLI prints the reason as the one stderr line of a failed run.
  if (exit.code === 2) throw new AgentError('ENVOY_REJECTED', exit.reason ?? 'Envoy rejects its configuration');
  if (exit.code !== 0) throw new AgentError('ENVOY_FAILED', exit.reason ?? 'Envoy failed');
  return exit.code;
}

/**
 * Signals and faults reach the loop from now on: SIGTERM, SIGINT and SIGHUP
 * drain (a second one hurries the drain); a fault stops Envoy at once and
 * waits for `closed`, the whole stack undone, before the process exits 1.
 */
function hookProcess(stack: AsyncDisposableStack, parts: { guard: ProcessHooks; agent: Agent; closed: Promise<void>; logger: Logger }): void {
  const { guard, agent } = parts;
  stack.defer(guard.onTerminate((signal) => {
    parts.logger.info({ signal }, 'signal received');
    if (shuttingDown(agent.state)) agent.hurry();
    agent.dispatch({ type: 'shutdown' });
  }));
  stack.defer(guard.whileRunning(async () => {
    agent.stopNow();
    await parts.closed;
  }));
}

/**
 * The xDS relay with what it serves from: the last-known-good config and the Wasm
 * loader. Listening before Envoy starts: Envoy's first ADS connect then succeeds at once.
 */
async function startRelay(stack: AsyncDisposableStack, parts: { options: SuperviseOptions; registry: Registry; ca: CaRuntime | undefined; dns: DnsRuntime | undefined }): Promise<XdsRelay> {
  const { options, registry, ca } = parts;
  const xdsLogger = options.logger.child({ component: 'xds' });
  const { lastKnownGood, lastKnownGoodFile } = await loadLastKnownGoodConfig({ configPath: options.config.configPath, node: options.bootstrap.nodeId, clock: systemClock, logger: xdsLogger });
  stack.defer(() => lastKnownGoodFile.close());
  const wasm = startWasmLoader(options.wasm, { clock: systemClock, logger: options.logger.child({ component: 'wasm' }), registry });
  if (wasm) stack.defer(() => wasm.stop());
  // Once the CA has issued one, new connections to istiod present the workload certificate too (never waited for).
  const upstream = { ...options.upstream, heldCertificate: ca && (() => ca.workloadCertificate()) };
  const relay = new XdsRelay({ socketPath: options.sockets.xds, upstream, registry, clock: systemClock, logger: xdsLogger, lastKnownGood, nameTables: parts.dns?.nameTables, ecds: wasm?.convert });
  await relay.start();
  stack.defer(() => relay.stop());
  return relay;
}

/** The reconcile loop over Envoy's epochs, with their metrics; disposing it stops every epoch. */
function startAgent(stack: AsyncDisposableStack, parts: { options: SuperviseOptions; registry: Registry; onSpawn: () => void }) {
  const { options, registry } = parts;
  const { config, bootstrap, logger } = options;
  const metrics = registerAgentMetrics(registry);
  const epochs = new EpochTracker({ clock: systemClock, metrics });
  const envoyProxy = new EnvoyProxy({
    config, serviceNode: bootstrap.nodeId, bootstrap: bootstrap.text, launch: options.launch,
    clock: systemClock, logger: logger.child({ component: 'envoy' }), onSpawn: parts.onSpawn,
  });
  const agent = stack.use(new Agent({ proxy: epochs.wrap(envoyProxy), clock: systemClock, logger: logger.child({ component: 'agent' }), policy: retryPolicy(config) }));
  registerStateGauges(registry, () => agent.state);
  agent.onEvent(countAgentEvents(metrics));
  return { agent, epochs, envoyProxy };
}

/**
 * Delta xDS is the default, as Istio's since 1.22. A discovery server without
 * it (Istio 1.1's Pilot) answers the Delta call UNIMPLEMENTED: then, once,
 * the next epoch gets a SotW bootstrap (a hot restart, validated before it
 * takes over, as every one) and the agent stays on SotW. Returns the undo.
 */
function fallBackToSotw(parts: {
  relay: XdsRelay; agent: Agent; envoyProxy: EnvoyProxy; xds: { mode: 'delta' | 'sotw'; configSuffix: string }; render: (() => Promise<string>) | undefined; logger: Logger;
}): () => void {
  const { relay, agent, envoyProxy, xds, render, logger } = parts;
  if (xds.mode !== 'delta' || !render) return () => undefined;
  const stop = relay.onDeltaUnimplemented(() => {
    if (xds.mode !== 'delta') return;
    xds.mode = 'sotw';
    stop();
    logger.info({}, 'the discovery server does not implement Delta xDS (UNIMPLEMENTED): restarting Envoy with State of the World, for the rest of this run');
    void render().then((text) => {
      envoyProxy.useBootstrap(text);
      // A config of its own, so the loop starts the next epoch; later certificate changes keep the mark.
      xds.configSuffix = '+sotw';
      // An epoch still starting (waiting on Delta it will never get) has nothing to hand over: replaced, not waited for.
      if (agent.state.desired !== undefined) agent.dispatch({ type: 'config-changed', config: agent.state.desired + xds.configSuffix, replaceStarting: true });
    }, (err: unknown) => logger.error({ err }, 'cannot render the SotW bootstrap; staying on Delta'));
  });
  return stop;
}
