import { Agent } from '../agent/agent.ts';
import type { Proxy } from '../agent/proxy.ts';
import { defaultExpiryMarginMs, RestartGate, type XdsReadiness } from '../agent/restart-gate.ts';
import type { AgentConfig } from '../settings/proxy-settings.ts';
import { certFilesIn } from '../shared/istio-files.ts';
import { EpochTracker } from '../status/epochs.ts';
import { countAgentEvents, registerAgentMetrics, registerStateGauges } from '../status/metrics.ts';
import { readCertNotAfter } from '../watch/cert-set.ts';
import type { RuntimeContext } from './context.ts';
import { saveMemoryOnceLive } from './memory-saver.ts';

/** The proxy the loop runs: Envoy, or a fake in tests; `useBootstrap` is the Delta→SotW fallback's. */
export type LoopProxy = Proxy & { useBootstrap?(text: string): void };

export interface EnvoyLoop extends AsyncDisposable {
  agent: Agent;
  epochs: EpochTracker;
  gate: RestartGate;
  proxy: LoopProxy;
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
export function startEnvoyLoop(ctx: RuntimeContext, parts: { proxy: LoopProxy; xds: XdsReadiness & { endStreams?(): void } }): EnvoyLoop {
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
    agent, epochs, gate, proxy: parts.proxy,
    [Symbol.asyncDispose]: async () => {
      gate.stop();
      await agent[Symbol.asyncDispose]();
    },
  };
}
