/**
 * The sidecar (or gateway) runtime: starts Envoy first and every other part
 * as soon as what it depends on is up, runs the reconcile loop until a signal, a fault or
 * Envoy's own end, and stops every part that started in reverse order, once,
 * on every way out: one disposable stack.
 */
import { EnvoyProxy } from '../envoy/envoy-proxy.ts';
import { AgentError } from '../shared/errors.ts';
import { startCertsPart } from './certs.ts';
import type { RuntimeContext } from './context.ts';
import { startDnsPart } from './dns.ts';
import { startEnvoyLoop } from './envoy-loop.ts';
import { hookProcess } from './process-hooks.ts';
import { startSdsPart } from './sds.ts';
import type { XdsChoice } from './sotw-fallback.ts';
import { LateXdsReadiness } from './late-xds-readiness.ts';
import { bindXdsSocket, xdsConnectionLimits } from '../xds/relay/xds-socket.ts';

import type { EnvoyRecipeInputs } from './envoy-recipe-inputs.ts';

export type { EnvoyRecipeInputs };

/**
 * Runs Envoy until a signal, a fault or its own end; resolves the exit code (throws for a failed run).
 * Envoy first: only what its spawn needs starts before it (the sockets it dials, the loop, the first
 * certificate set); the rest (beside-envoy.ts) loads and starts while Envoy boots.
 */
export async function runEnvoyRecipe(ctx: RuntimeContext, inputs: EnvoyRecipeInputs): Promise<number> {
  const { config, events } = ctx;
  const { bootstrap } = inputs;
  await using stack = new AsyncDisposableStack();
  // Undone last: a fault waits for every step below (sockets removed, the last-known-good config written) before the process exits 1.
  stack.defer(() => events.stopped.emit());
  // First: a DNS_PROXY_ADDR it cannot bind is bad input, and nothing else has started yet.
  const dns = stack.use(await startDnsPart(ctx, { ...inputs.dns, domain: bootstrap.domain, node: bootstrap.nodeId }));
  const sds = stack.use(await startSdsPart(ctx, { workloadFromCa: inputs.caSettings !== undefined }));
  // Envoy's first ADS connection waits on this socket until the relay, loaded after the spawn, takes it.
  const xdsSocket = await bindXdsSocket({ path: inputs.sockets.xds, mode: 0o600, maxConnections: xdsConnectionLimits.max });
  stack.defer(() => xdsSocket.close());
  const xds: XdsChoice = { mode: config.deltaXds ? 'delta' : 'sotw', configSuffix: '' };
  const readiness = new LateXdsReadiness();
  const loop = stack.use(startEnvoyLoop(ctx, { proxy: inputs.proxy ?? envoyProxy(ctx, inputs), xds: readiness }));
  const { agent } = loop;
  stack.use(hookProcess(inputs.guard, { agent, stopped: () => events.stopped.first(), logger: ctx.logger }));
  const restart = (hash: string) => {
    // The gate keeps the expiry under the config the loop runs (a SotW fallback marks it).
    const config = hash + xds.configSuffix;
    loop.gate.certsChanged(config);
    agent.dispatch({ type: 'config-changed', config });
  };
  // The first certificate set starts epoch 0.
  stack.use(await startCertsPart(ctx, { caInUse: Boolean(inputs.caSettings), feed: sds.certFeed(restart) }));
  await Promise.race([events.envoySpawned.first(), agent.exited]);
  const { startBesideEnvoy } = await import('./beside-envoy.ts');
  stack.use(await startBesideEnvoy(ctx, { inputs, loop, sds, dns, xdsSocket, readiness, xds }));
  events.started.emit();
  const exit = await agent.exited;
  // The CLI prints the reason as the one stderr line of a failed run.
  if (exit.error) throw new AgentError(exit.error, exit.reason ?? exit.error);
  return 0;
}

function envoyProxy(ctx: RuntimeContext, inputs: EnvoyRecipeInputs): EnvoyProxy {
  const { bootstrap } = inputs;
  return new EnvoyProxy({
    config: ctx.config,
    serviceNode: bootstrap.nodeId,
    bootstrap: bootstrap.text,
    launch: inputs.launch,
    clock: ctx.clock,
    logger: ctx.logger.child({ component: 'envoy' }),
  });
}
