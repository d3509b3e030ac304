/**
 * What runs beside Envoy, started once its first epoch is spawned
 * (envoy-recipe.ts): the CA client, the Wasm loader, the xDS relay on the
 * socket Envoy already dials, the SotW fallback and the status server. This
 * module is loaded then, so node:http2, node:tls and these parts load while
 * Envoy boots instead of before its spawn.
 */
import { buildGrpcBootstrap, writeGrpcBootstrap } from '../grpcxds/bootstrap.ts';
import type { XdsSocket } from '../xds/relay/xds-socket.ts';
import { startCaPart, withCaDebug } from './ca.ts';
import type { RuntimeContext } from './context.ts';
import type { DnsPart } from './dns.ts';
import type { EnvoyLoop } from './envoy-loop.ts';
import type { EnvoyRecipeInputs } from './envoy-recipe-inputs.ts';
import type { LateXdsReadiness } from './late-xds-readiness.ts';
import { startRelayPart } from './relay.ts';
import type { SdsPart } from './sds.ts';
import { fallBackToSotw, type XdsChoice } from './sotw-fallback.ts';
import { startStatusPart } from './status.ts';
import { startWasmPart } from './wasm.ts';

export interface BesideEnvoyParts {
  inputs: EnvoyRecipeInputs;
  loop: EnvoyLoop;
  sds: SdsPart;
  dns: DnsPart | undefined;
  /** Envoy's ADS socket, bound before the spawn; its connections wait for the relay. */
  xdsSocket: XdsSocket;
  /** What the restart gate reads: the relay's readiness once it has started. */
  readiness: LateXdsReadiness;
  xds: XdsChoice;
}

/** Starts the parts beside Envoy; disposing the result stops them in reverse order. */
export async function startBesideEnvoy(ctx: RuntimeContext, parts: BesideEnvoyParts): Promise<AsyncDisposable> {
  const { inputs, loop, sds, dns, xds } = parts;
  const { config, events } = ctx;
  await using stack = new AsyncDisposableStack();
  const caOptions = { settings: inputs.caSettings, store: sds.store, firstCallAfter: events.envoySpawned.first(), firstKey: inputs.caFirstKey };
  const ca = stack.use(await startCaPart(ctx, caOptions));
  const wasm = stack.use(startWasmPart(ctx, inputs.wasm));
  const relayParts = { ca, nameTables: dns?.nameTables, ecds: wasm?.convert, socket: parts.xdsSocket };
  const relayInputs = { socketPath: inputs.sockets.xds, upstream: inputs.upstream, node: inputs.bootstrap.nodeId, ...relayParts };
  const relay = stack.use(await startRelayPart(ctx, relayInputs));
  stack.defer(parts.readiness.attach(relay));
  if (inputs.grpcBootstrapPath) await writeSideBootstrap(inputs.grpcBootstrapPath, inputs);
  // The relay dials for Envoy's first stream of each epoch while Envoy boots (a custom bootstrap may not use the relay at all).
  if (!config.customConfigFile) {
    relay.predial(xds.mode);
    stack.defer(events.envoySpawned.on(() => relay.predial(xds.mode)));
  }
  const { agent } = loop;
  stack.use(fallBackToSotw({ relay, agent, gate: loop.gate, proxy: loop.proxy, xds, render: inputs.bootstrap.renderSotw, logger: ctx.logger }));
  stack.use(await startStatusPart(ctx, {
    readinessSocketPath: inputs.sockets.readiness, agent, epochs: loop.epochs, xds: relay, sds: withCaDebug(sds, ca),
    certificateProblem: () => ca?.problem() ?? dns?.problem(), app: inputs.app, dns,
  }));
  return stack.move();
}

/** A proxyless gRPC app beside Envoy reaches istiod through the same relay. */
async function writeSideBootstrap(path: string, { sockets, bootstrap, caSettings }: EnvoyRecipeInputs): Promise<void> {
  const { nodeId, metadata } = bootstrap;
  await writeGrpcBootstrap(path, buildGrpcBootstrap({ xdsSocketPath: sockets.xds, nodeId, metadata, certDir: caSettings?.outputDir }));
}
