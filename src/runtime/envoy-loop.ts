import { Agent } from '../agent/agent.ts';
import type { Proxy } from '../agent/proxy.ts';
import { defaultExpiryMarginMs, RestartGate, type XdsReadiness } from '../agent/restart-gate.ts';
import type { XdsMode } from '../discovery/wire.ts';
import type { AgentConfig } from '../settings/proxy-settings.ts';
import { certFilesIn } from '../shared/istio-files.ts';
import { readCertNotAfter } from '../watch/cert-set.ts';
import type { RuntimeContext } from './context.ts';
import { countAgentEvents, EpochTracker, registerAgentMetrics, registerStateGauges } from './epochs.ts';
import { saveMemoryOnceLive } from './memory-saver.ts';

/** The proxy the loop runs: Envoy, or a fake in tests; `useBootstrap` is the Delta→SotW fallback's. */
export type LoopProxy = Proxy & { useBootstrap?(text: string): void };

/** The xDS flavour Envoy's next epoch speaks, and the mark its config gets once it fell back (sotw-fallback.ts switches it). */
export interface XdsChoice {
  mode: XdsMode;
  configSuffix: string;
}

/**
 * Asks the loop for a new epoch running the certificate set `certs` (its
 * hash); `replaceStarting`: an epoch still starting is replaced, not waited for.
 */
export type RequestEpoch = (certs: string, options?: { replaceStarting: true }) => void;

export interface EnvoyLoop extends AsyncDisposable {
  agent: Agent;
  epochs: EpochTracker;
  proxy: LoopProxy;
  /** The one way to a new epoch: certificate rotation and the SotW fallback both ask through it. */
  requestEpoch: RequestEpoch;
}

/** Restart after failures: --retryInitialDelay × 2^n, --retryBudget tries; refilled after a minute LIVE. */
const retryPolicy = (config: AgentConfig) => ({
  initialDelayMs: config.retryInitialDelayMs,
  budget: config.retryBudget,
  stableAfterMs: 60_000,
  parentInitializingDelayMs: 1000,
});

/** The shutdown's wait once Envoy drains (Istio's terminate step). */
const drainPolicy = (config: AgentConfig) => ({
  durationMs: config.terminationDrainDurationMs,
  exitOnZeroActiveConnections: config.exitOnZeroActiveConnections,
  minDurationMs: config.minimumDrainDurationMs,
});

/**
 * The reconcile loop over the proxy's epochs, with their metrics and the
 * restart gate; every spawn is told as `envoySpawned`. Disposing it stops the
 * gate, then every epoch (resolves once no Envoy is left).
 */
export function startEnvoyLoop(
  ctx: RuntimeContext,
  parts: { proxy: LoopProxy; xds: XdsReadiness & { endStreams?(): void }; choice: Pick<XdsChoice, 'configSuffix'> },
): EnvoyLoop {
  const { config, registry, clock, logger } = ctx;
  const metrics = registerAgentMetrics(registry);
  const epochs = new EpochTracker({ clock, metrics });
  const agent = new Agent({
    proxy: epochs.wrap(parts.proxy), clock, logger: logger.child({ component: 'agent' }), policy: retryPolicy(config), drain: drainPolicy(config),
  });
  registerStateGauges(registry, () => agent.state);
  agent.onEvent(countAgentEvents(metrics));
  agent.onEvent(saveMemoryOnceLive());
  agent.onEvent((event) => event.type === 'epoch-spawned' && ctx.events.envoySpawned.emit({ epoch: event.epoch, pid: event.pid }));
  // Before the first Envoy is stopped (newest first), the relay's streams end oldest first (XdsRelay.endStreams: a VM's WorkloadEntry).
  agent.onEvent((_event, state) => void (state.phase === 'stopping' && parts.xds.endStreams?.()));
  const gate = new RestartGate({
    xds: parts.xds, clock, dispatch: (event) => agent.dispatch(event), state: () => agent.state,
    readNotAfter: () => readCertNotAfter(certFilesIn(config.certDir).chain), expiryMarginMs: defaultExpiryMarginMs,
  });
  gate.start();
  return {
    agent, epochs, proxy: parts.proxy, requestEpoch: epochRequests({ gate, agent, choice: parts.choice }),
    [Symbol.asyncDispose]: async () => {
      gate.stop();
      await agent[Symbol.asyncDispose]();
    },
  };
}

/**
 * The config of a new epoch is the certificate set's hash with the xDS
 * flavour's mark. The restart gate hears of it first (it keeps that config's
 * certificate expiry: without it a held restart never goes ahead near the
 * expiry), then the loop.
 */
export function epochRequests(parts: {
  gate: Pick<RestartGate, 'certsChanged'>;
  agent: Pick<Agent, 'dispatch'>;
  choice: Pick<XdsChoice, 'configSuffix'>;
}): RequestEpoch {
  return (certs, options) => {
    const config = certs + parts.choice.configSuffix;
    parts.gate.certsChanged(config);
    parts.agent.dispatch({ type: 'config-changed', config, ...options });
  };
}
