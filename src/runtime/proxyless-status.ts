import { access, readFile } from 'node:fs/promises';
import type { CaRuntime } from '../ca/start.ts';
import type { GrpcBootstrap } from '../grpcxds/bootstrap.ts';
import type { Registry } from '../metrics/index.ts';
import type { StatusDeps } from '../status/handler.ts';
import type { Readiness } from '../status/readiness.ts';
import type { XdsRelay } from '../xds/relay/relay.ts';

/** The status endpoints without Envoy: readiness is the app's bootstrap and certificate files. */
export function proxylessDeps(options: {
  registry: Registry;
  relay: XdsRelay;
  ca: CaRuntime | undefined;
  bootstrapPath: string;
  stop: () => void;
}): StatusDeps {
  return {
    readiness: { check: () => proxylessReadiness(options.bootstrapPath, options.ca) },
    agentMetrics: () => options.registry.metrics(),
    envoyMetrics: async () => ({ ok: true, status: 200, body: [] }),
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
    return {
      ready: false,
      reason: `gRPC bootstrap ${bootstrapPath} is not readable yet (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
    };
  }
  for (const provider of Object.values(bootstrap.certificate_providers ?? {})) {
    for (const file of Object.values(provider.config).filter((value) => value.endsWith('.pem'))) {
      if (!(await access(file).then(() => true, () => false))) return { ready: false, reason: `certificate file ${file} does not exist yet` };
    }
  }
  return { ready: true };
}
