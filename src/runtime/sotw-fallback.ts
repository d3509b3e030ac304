import type { Agent } from '../agent/agent.ts';
import type { RestartGate } from '../agent/restart-gate.ts';
import type { Logger } from '../shared/log.ts';
import type { XdsRelay } from '../xds/relay/relay.ts';
import type { LoopProxy } from './envoy-loop.ts';

/** The xDS flavour Envoy's next epoch speaks, and the mark its config gets once it fell back. */
export interface XdsChoice {
  mode: 'delta' | 'sotw';
  configSuffix: string;
}

/**
 * Delta xDS is the default, as Istio's since 1.22. A discovery server without
 * it (Istio 1.1's Pilot) answers the Delta call UNIMPLEMENTED: then, once,
 * the next epoch gets a SotW bootstrap (a hot restart, validated before it
 * takes over, as every one) and the agent stays on SotW. Returns the undo.
 */
export function fallBackToSotw(parts: {
  relay: Pick<XdsRelay, 'onDeltaUnimplemented'>;
  agent: Pick<Agent, 'state' | 'dispatch'>;
  /** Told of the new config first: it keeps a certificate's expiry per config the loop runs. */
  gate: Pick<RestartGate, 'certsChanged'>;
  proxy: LoopProxy;
  xds: XdsChoice;
  render: (() => Promise<string>) | undefined;
  logger: Logger;
}): Disposable {
  const { relay, agent, gate, proxy, xds, render, logger } = parts;
  const none = { [Symbol.dispose]: () => undefined };
  if (xds.mode !== 'delta' || !render || !proxy.useBootstrap) return none;
  const stop = relay.onDeltaUnimplemented(() => {
    if (xds.mode !== 'delta') return;
    xds.mode = 'sotw';
    stop();
    logger.info({}, 'the discovery server does not implement Delta xDS (UNIMPLEMENTED): restarting Envoy with State of the World, for the rest of this run');
    void render().then(
      (text) => {
        proxy.useBootstrap?.(text);
        // A config of its own, so the loop starts the next epoch; later certificate changes keep the mark.
        xds.configSuffix = '+sotw';
        // An epoch still starting (waiting on Delta it will never get) has nothing to hand over: replaced, not waited for.
        if (agent.state.desired === undefined) return;
        // The same certificate files under a new config: the gate must know its expiry, or a held rotation never goes ahead near it.
        const config = agent.state.desired + xds.configSuffix;
        gate.certsChanged(config);
        agent.dispatch({ type: 'config-changed', config, replaceStarting: true });
      },
      (err: unknown) => logger.error({ err }, 'cannot render the SotW bootstrap; staying on Delta'),
    );
  });
  return { [Symbol.dispose]: () => stop() };
}
