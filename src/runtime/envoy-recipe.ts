/**
 * The sidecar (or gateway) runtime: starts every part in the order they
 * depend on each other, runs the reconcile loop until a signal, a fault or
 * Envoy's own end, and stops every part that started in reverse order, once,
 * on every way out: one disposable stack.
 */
import type { CaSettings } from '../ca/ca-settings.ts';
import type { EnvoyLaunch } from '../envoy/args.ts';
import { adminClient } from '../envoy/admin.ts';
import { EnvoyProxy } from '../envoy/envoy-proxy.ts';
import { buildGrpcBootstrap, writeGrpcBootstrap } from '../grpcxds/bootstrap.ts';
import { HealthReports } from '../health/reports.ts';
import type { NodeMetadata } from '../role/metadata.ts';
import type { EnvValues } from '../settings/env-settings.ts';
import type { wasmEnv } from '../settings/wasm-env.ts';
import { AgentError } from '../shared/errors.ts';
import { startStatus, type StartStatusOptions } from '../status/status.ts';
import { startWasmLoader } from '../wasm/start.ts';
import type { XdsRelayOptions } from '../xds/relay/relay.ts';
import { startCaPart, withCaDebug } from './ca.ts';
import { roomDeps, type RuntimeContext } from './context.ts';
import { startDnsPart, type DnsInputs } from './dns.ts';
import { startHealthPart, type HealthInputs } from './health.ts';
import { startEnvoyLoop, type LoopProxy, type XdsChoice } from './envoy-loop.ts';
import { hookProcess, type ProcessHooks } from './process-hooks.ts';
import { startRelayPart } from './relay.ts';
import { Rotation } from './rotation.ts';
import { startSdsPart } from './sds.ts';
import { fallBackToSotw } from './sotw-fallback.ts';

export interface EnvoyRecipeInputs {
  bootstrap: { nodeId: string; metadata: NodeMetadata; text: string; domain: string; renderSotw?: () => Promise<string>; locality?: Record<string, string> };
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
  /** ProxyConfig.readinessProbe and how it reaches the app: the workload's health, reported to the discovery server. */
  health?: Pick<HealthInputs, 'probe' | 'network'>;
  guard: ProcessHooks;
  /** Tests: the proxy the loop runs instead of Envoy. */
  proxy?: LoopProxy;
}

/** Runs Envoy until a signal, a fault or its own end; resolves the exit code (throws for a failed run). */
export async function runEnvoyRecipe(ctx: RuntimeContext, inputs: EnvoyRecipeInputs): Promise<number> {
  const { config, events } = ctx;
  const { bootstrap } = inputs;
  await using stack = new AsyncDisposableStack();
  // Undone last: a fault waits for every step below (sockets removed, the last-known-good config written) before the process exits 1.
  stack.defer(() => events.stopped.emit());
  // First: a DNS_PROXY_ADDR it cannot bind is bad input, and nothing else has started yet.
  const dns = stack.use(await startDnsPart(ctx, { ...inputs.dns, domain: bootstrap.domain, node: bootstrap.nodeId }));
  const sds = stack.use(await startSdsPart(ctx));
  // Every certificate, the CA's and the dir's, goes through the rotation's one owner: to SDS, or to a new epoch.
  const rotation = new Rotation(ctx, { sds, caInUse: inputs.caSettings !== undefined, outputDir: inputs.caSettings?.outputDir });
  // The CA's first call waits for Envoy's first spawn.
  const ca = stack.use(await startCaPart(ctx, { settings: inputs.caSettings, onIssued: rotation.caFeed(), firstCallAfter: events.envoySpawned.first() }));
  const wasm = stack.use(startWasmLoader(inputs.wasm, roomDeps(ctx, 'wasm')));
  // ProxyConfig.readinessProbe's checks, reported where the relay reads them; none without a probe.
  const health = inputs.health && { ...inputs.health, reports: new HealthReports() };
  const relayParts = { ca, nameTables: dns?.nameTables, ecds: wasm?.convert, health: health?.reports };
  const relay = stack.use(await startRelayPart(ctx, { socketPath: inputs.sockets.xds, upstream: inputs.upstream, node: bootstrap.nodeId, ...relayParts }));
  if (inputs.grpcBootstrapPath) await writeSideBootstrap(inputs.grpcBootstrapPath, inputs);
  const xds: XdsChoice = { mode: config.deltaXds ? 'delta' : 'sotw', configSuffix: '' };
  // While Envoy boots, the relay dials for its first stream (a custom bootstrap may not use the relay at all).
  if (!config.customConfigFile) stack.defer(events.envoySpawned.on(() => relay.predial(xds.mode)));
  const loop = stack.use(startEnvoyLoop(ctx, { proxy: inputs.proxy ?? envoyProxy(ctx, inputs), xds: relay, choice: xds }));
  const { agent } = loop;
  const bootstraps = bootstrap.renderSotw && { delta: bootstrap.text, sotw: bootstrap.renderSotw };
  stack.use(fallBackToSotw({ relay, agent, requestEpoch: loop.requestEpoch, proxy: loop.proxy, xds, bootstraps, clock: ctx.clock, logger: ctx.logger }));
  stack.use(await startStatus({
    ...statusPorts(ctx), ...roomDeps(ctx, 'status'), readinessSocketPath: inputs.sockets.readiness, agent, epochs: loop.epochs, xds: relay,
    sds: withCaDebug(sds, ca), certificateProblem: () => ca?.problem() ?? dns?.problem(), app: inputs.app, dns,
  }));
  stack.use(health && startHealthPart(ctx, { ...health, agent, epochs: loop.epochs, certificateProblem: () => ca?.problem() }));
  stack.use(hookProcess(inputs.guard, { agent, stopped: () => events.stopped.first(), logger: ctx.logger }));
  // Last: the first certificate set starts Envoy, and everything it talks to is up by now.
  stack.use(await rotation.watch(loop));
  const exit = await agent.exited;
  // The CLI prints the reason as the one stderr line of a failed run.
  if (exit.error) throw new AgentError(exit.error, exit.reason ?? exit.error);
  return 0;
}

/** The status server on --statusPort (none when 0), beside Envoy's admin. */
function statusPorts({ config }: RuntimeContext) {
  const { statusPort: port, proxyAdminPort: adminPort, proxyAdminHost: adminHost } = config;
  return { port, adminPort, adminHost, admin: adminClient(adminPort, { host: adminHost }) };
}

/** A proxyless gRPC app beside Envoy reaches istiod through the same relay. */
async function writeSideBootstrap(path: string, { sockets, bootstrap, caSettings }: EnvoyRecipeInputs): Promise<void> {
  const { nodeId, metadata, locality } = bootstrap;
  await writeGrpcBootstrap(path, buildGrpcBootstrap({ xdsSocketPath: sockets.xds, nodeId, metadata, locality, certDir: caSettings?.outputDir }));
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
