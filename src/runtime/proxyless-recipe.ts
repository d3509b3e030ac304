/**
 * Proxyless gRPC (DISABLE_ENVOY=true, Istio's grpc-agent template): the app
 * speaks xDS itself, through the agent's relay, and reads its certificates
 * from OUTPUT_CERTS through gRPC's file_watcher provider. So: no Envoy, no
 * SDS server, no hot restarts; the relay, the CA client and the status
 * server run until SIGTERM.
 */
import type { CaSettings } from '../ca/ca-settings.ts';
import { buildGrpcBootstrap, writeGrpcBootstrap } from '../grpcxds/bootstrap.ts';
import { startStatusServer } from '../status/server.ts';
import type { UpstreamOptions } from '../xds/upstream/material.ts';
import { startCaPart } from './ca.ts';
import { roomDeps, type RuntimeContext } from './context.ts';
import type { ProcessHooks } from './process-hooks.ts';
import { proxylessDeps } from './proxyless-status.ts';
import { startRelayPart, type RelayPart } from './relay.ts';
import type { CaRuntime } from '../ca/start.ts';

export interface ProxylessInputs {
  nodeId: string;
  metadata: object;
  /** Envoy's node.locality, for the gRPC bootstrap's node. */
  locality?: Record<string, string>;
  caSettings: CaSettings | undefined;
  /** How the relay reaches the discovery server (xdsUpstream). */
  upstream: UpstreamOptions;
  /** Where the gRPC bootstrap goes. */
  bootstrapPath: string;
  xdsSocketPath: string;
  readinessSocketPath: string;
  guard: ProcessHooks;
}

/** Runs until SIGTERM, SIGINT, SIGHUP or /quitquitquit; resolves the exit code. */
export async function runProxylessRecipe(ctx: RuntimeContext, inputs: ProxylessInputs): Promise<number> {
  const { events, logger } = ctx;
  await using stack = new AsyncDisposableStack();
  stack.defer(() => events.stopped.emit());
  // No SDS here: the app reads the CA's certificate from OUTPUT_CERTS.
  const ca = stack.use(await startCaPart(ctx, { settings: inputs.caSettings, onIssued: () => undefined }));
  const relay = stack.use(
    await startRelayPart(ctx, { socketPath: inputs.xdsSocketPath, socketMode: 0o666, upstream: inputs.upstream, node: inputs.nodeId, ca }),
  );
  const bootstrap = buildGrpcBootstrap({
    xdsSocketPath: inputs.xdsSocketPath,
    nodeId: inputs.nodeId,
    metadata: inputs.metadata,
    locality: inputs.locality,
    certDir: inputs.caSettings?.outputDir,
  });
  await writeGrpcBootstrap(inputs.bootstrapPath, bootstrap);
  logger.info({ path: inputs.bootstrapPath, certificates: inputs.caSettings?.outputDir }, 'gRPC xDS bootstrap written; Envoy is disabled (proxyless gRPC)');
  stack.use(await startProxylessStatus(ctx, { relay, ca, inputs }));
  // SIGTERM, SIGINT and SIGHUP end the run; a fault waits for the closes above (the socket removed, the last-known-good config written).
  stack.defer(inputs.guard.onTerminate((signal) => (logger.info({ signal }, 'signal received'), events.stopRequested.emit(signal))));
  stack.defer(inputs.guard.whileRunning(async () => {
    events.stopRequested.emit('fault');
    await events.stopped.first();
  }));
  await events.stopRequested.first();
  return 0;
}

/** The status server without Envoy; undefined when --statusPort is 0. */
async function startProxylessStatus(
  ctx: RuntimeContext,
  parts: { relay: RelayPart; ca: CaRuntime | undefined; inputs: ProxylessInputs },
): Promise<AsyncDisposable | undefined> {
  if (ctx.config.statusPort === 0) return undefined;
  const { relay, ca, inputs } = parts;
  const deps = proxylessDeps({
    registry: ctx.registry,
    relay,
    ca,
    bootstrapPath: inputs.bootstrapPath,
    stop: () => ctx.events.stopRequested.emit('quitquitquit'),
  });
  return startStatusServer({ port: ctx.config.statusPort, readinessSocketPath: inputs.readinessSocketPath, deps, logger: roomDeps(ctx, 'status').logger });
}
