/**
 * The bootstrap a proxyless gRPC app reads (`GRPC_XDS_BOOTSTRAP`, gRPC's
 * A27): the agent's XDS socket as its only xDS server, the proxy's node with
 * `GENERATOR=grpc` (istiod then sends gRPC-shaped config, not Envoy's), a
 * `file_watcher` certificate provider over the files the agent keeps
 * rotated in OUTPUT_CERTS, and the name template for server listeners that
 * istiod serves as `xds.istio.io/grpc/lds/inbound/<ip:port>`.
 */
import { chmod, mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { badEnv, describe } from '../shared/errors.ts';
import { certFilesIn } from '../shared/istio-files.ts';

export const serverListenerNameTemplate = 'xds.istio.io/grpc/lds/inbound/%s';
/** How often gRPC re-reads the certificate files; Istio's agent uses the same 15 minutes. */
const refreshInterval = '900s';

export interface GrpcBootstrapInput {
  /** The agent's XDS socket (absolute). */
  xdsSocketPath: string;
  nodeId: string;
  /** The node metadata as Envoy gets it; GENERATOR is set here. */
  metadata: object;
  /** The node's locality as Envoy's bootstrap has it (labels, else the platform's), as Istio's gRPC bootstrap carries it. */
  locality?: Record<string, string>;
  /** OUTPUT_CERTS, when the agent writes certificates there; no provider without it. */
  certDir?: string;
}

export interface GrpcBootstrap {
  xds_servers: { server_uri: string; channel_creds: { type: string }[]; server_features: string[] }[];
  node: { id: string; locality: Record<string, string>; metadata: Record<string, unknown> };
  certificate_providers?: Record<string, { plugin_name: string; config: Record<string, string> }>;
  server_listener_resource_name_template: string;
}

export function buildGrpcBootstrap(input: GrpcBootstrapInput): GrpcBootstrap {
  const bootstrap: GrpcBootstrap = {
    // Local to the pod, owner-only socket: the relay dials istiod with the real credentials.
    xds_servers: [{ server_uri: `unix://${input.xdsSocketPath}`, channel_creds: [{ type: 'insecure' }], server_features: ['xds_v3'] }],
    // gRPC refuses a node without a locality; an empty one is "unknown".
    node: { id: input.nodeId, locality: input.locality ?? {}, metadata: { ...input.metadata, GENERATOR: 'grpc' } },
    server_listener_resource_name_template: serverListenerNameTemplate,
  };
  if (input.certDir) {
    const files = certFilesIn(input.certDir);
    bootstrap.certificate_providers = {
      default: {
        plugin_name: 'file_watcher',
        config: { certificate_file: files.chain, private_key_file: files.key, ca_certificate_file: files.root, refresh_interval: refreshInterval },
      },
    };
  }
  return bootstrap;
}

/**
 * Writes the bootstrap (directory 0700, file 0644 as Istio's) by rename, so
 * gRPC never reads half a file. A path that cannot be written is bad input
 * (exit 2 naming GRPC_XDS_BOOTSTRAP), and leaves no temporary file behind.
 */
export async function writeGrpcBootstrap(path: string, bootstrap: GrpcBootstrap): Promise<void> {
  const partial = `${path}.${process.pid}.tmp`;
  try {
    await mkdir(dirname(path), { recursive: true, mode: 0o700 });
    await writeFile(partial, `${JSON.stringify(bootstrap, null, 2)}\n`, { mode: 0o644 });
    await chmod(partial, 0o644);
    await rename(partial, path);
  } catch (error) {
    await rm(partial, { force: true }).catch(() => undefined);
    throw badEnv('GRPC_XDS_BOOTSTRAP', `cannot write the gRPC bootstrap at ${path} (${(error as NodeJS.ErrnoException).code ?? describe(error)})`, error);
  }
}
