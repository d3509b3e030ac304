/**
 * Proxyless gRPC (DISABLE_ENVOY=true, Istio's grpc-agent template): the app
 * speaks xDS itself, through the agent's relay, and reads its certificates
 * from OUTPUT_CERTS through gRPC's file_watcher provider. So: no Envoy, no
 * SDS server, no hot restarts; the relay, the CA client and the status
 * server run until SIGTERM.
 */
import { access, readFile } from 'node:fs/promises';
import { SecretStore } from '../sds/secret-store.ts';
import { startCa, type CaRuntime } from '../ca/start.ts';
import type { CaSettings } from '../ca/ca-settings.ts';
import { buildGrpcBootstrap, writeGrpcBootstrap, type GrpcBootstrap } from '../grpcxds/bootstrap.ts';
import { Registry } from '../metrics/index.ts';
import { systemClock } from '../shared/clock.ts';
import type { Logger } from '../shared/log.ts';
import type { AgentConfig } from '../settings/proxy-settings.ts';
import type { StatusDeps } from '../status/handler.ts';
import type { Readiness } from '../status/readiness.ts';
import { startStatusServer } from '../status/server.ts';
import { loadLastKnownGoodConfig } from '../xds/last-known-good/file.ts';
import { XdsRelay } from '../xds/relay/relay.ts';
import { processGuard } from './process-guard.ts';
import type { UpstreamOptions } from '../xds/upstream/material.ts';

export interface ProxylessInputs {
  nodeId: string;
  metadata: object;
  caSettings: CaSettings | undefined;
  /** How the relay reaches the discovery server (xdsUpstream). */
  upstream: UpstreamOptions;
  /** Where the gRPC bootstrap goes. */
  bootstrapPath: string;
  xdsSocketPath: string;
  readinessSocketPath: string;
}

/** Runs until SIGTERM or SIGINT; resolves the exit code. */
export async function superviseProxyless(config: AgentConfig, inputs: ProxylessInputs, logger: Logger): Promise<number> {
  const registry = new Registry();
  await using stack = new AsyncDisposableStack();
  const ca = inputs.caSettings && (await startCa({ settings: inputs.caSettings, store: new SecretStore(), registry, clock: systemClock, logger: logger.child({ component: 'ca' }) }));
  if (ca) stack.defer(() => ca.stop());
  const xdsLogger = logger.child({ component: 'xds' });
  const { lastKnownGood, lastKnownGoodFile } = await loadLastKnownGoodConfig({ configPath: config.configPath, node: inputs.nodeId, clock: systemClock, logger: xdsLogger });
  stack.defer(() => lastKnownGoodFile.close());
  const upstream = { ...inputs.upstream, heldCertificate: ca && (() => ca.workloadCertificate()) };
  // The app, not Envoy, dials the socket, and it may run as any user: 0666 as Istio's.
  const relay = new XdsRelay({ socketPath: inputs.xdsSocketPath, socketMode: 0o666, upstream, registry, clock: systemClock, logger: xdsLogger, lastKnownGood });
  await relay.start();
  stack.defer(() => relay.stop());
  const bootstrap = buildGrpcBootstrap({ xdsSocketPath: inputs.xdsSocketPath, nodeId: inputs.nodeId, metadata: inputs.metadata, certDir: inputs.caSettings?.outputDir });
  await writeGrpcBootstrap(inputs.bootstrapPath, bootstrap);
  logger.info({ path: inputs.bootstrapPath, certificates: inputs.caSettings?.outputDir }, 'gRPC xDS bootstrap written; Envoy is disabled (proxyless gRPC)');
  let stop!: () => void;
  const stopped = new Promise<void>((resolve) => (stop = resolve));
  if (config.statusPort !== 0) {
    const deps = proxylessDeps({ registry, relay, ca, bootstrapPath: inputs.bootstrapPath, stop });
    const status = await startStatusServer({ port: config.statusPort, readinessSocketPath: inputs.readinessSocketPath, deps, logger: logger.child({ component: 'status' }) });
    stack.defer(() => status.close());
  }
  // SIGTERM, SIGINT and SIGHUP end the run; a fault waits for the closes above (the socket removed, the last-known-good config written).
  const onSignal = (signal: NodeJS.Signals) => (logger.info({ signal }, 'signal received'), stop());
  stack.defer(processGuard.onTerminate(onSignal));
  stack.defer(processGuard.whileRunning(async () => stop()));
  await stopped;
  return 0;
}

/** The status endpoints without Envoy: readiness is the app's bootstrap and certificate files. */
function proxylessDeps(options: { registry: Registry; relay: XdsRelay; ca: CaRuntime | undefined; bootstrapPath: string; stop: () => void }): StatusDeps {
  return {
    readiness: { check: () => proxylessReadiness(options.bootstrapPath, options.ca) },
    agentMetrics: () => options.registry.metrics(),
    envoyMetrics: async () => ({ ok: true, status: 200, text: '', truncated: false }),
    epochs: () => ({ envoy: 'disabled (DISABLE_ENVOY=true)' }),
    xds: options.relay,
    quit: options.stop,
    drain: async () => true,
  };
}

/**
 * Ready once the app can start: the bootstrap parses and the files its
 * certificate provider names exist (Istio's grpcready probe), and the CA
 * has a current certificate.
 */
export async function proxylessReadiness(bootstrapPath: string, ca?: { problem(): string | undefined }): Promise<Readiness> {
  const problem = ca?.problem();
  if (problem) return { ready: false, reason: problem };
  let bootstrap: GrpcBootstrap;
  try {
    bootstrap = JSON.parse(await readFile(bootstrapPath, 'utf8')) as GrpcBootstrap;
  } catch (error) {
    return { ready: false, reason: `gRPC bootstrap ${bootstrapPath} is not readable yet (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})` };
  }
  for (const provider of Object.values(bootstrap.certificate_providers ?? {})) {
    for (const file of Object.values(provider.config).filter((value) => value.endsWith('.pem'))) {
      if (!(await access(file).then(() => true, () => false))) return { ready: false, reason: `certificate file ${file} does not exist yet` };
    }
  }
  return { ready: true };
}
