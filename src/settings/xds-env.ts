import { badEnv } from '../shared/errors.ts';
import { caEnv } from './ca-env.ts';
import { readEnvText } from './env-settings.ts';
import { envPrefixes, readPrefixedEnv } from './pod-env.ts';

const headerPrefix = envPrefixes.xdsHeader;
/** HTTP/2 field names gRPC metadata may use; a name outside them would only fail at the first dial. */
const metadataName = /^[0-9a-z_.-]+$/;

/**
 * The gRPC metadata Istio's agent puts on every xDS call: `ClusterID` from
 * ISTIO_META_CLUSTER_ID (istiod picks the cluster that checks the token by
 * it; not the CA's CLUSTER_ID fallback), then XDS_HEADER_<name>=<value>.
 * gRPC lowercases the names.
 */
export function xdsCallMetadata(env: NodeJS.ProcessEnv): Record<string, string> {
  const metadata: Record<string, string> = { clusterid: readEnvText(env, caEnv.clusterId) ?? '' };
  const headers = readPrefixedEnv(env, [headerPrefix]);
  for (const name of Object.keys(headers).sort()) {
    const key = name.slice(headerPrefix.length).toLowerCase();
    const value = headers[name]!;
    if (!metadataName.test(key) || key.startsWith('grpc-') || key === 'authorization' || key === 'te') {
      throw badEnv(name, `"${key}" cannot be a gRPC metadata name (lowercase letters, digits, "_", "-", "."; not grpc-*, te or authorization)`);
    }
    if (/[^\x20-\x7e]/.test(value)) throw badEnv(name, 'the value must be printable ASCII (gRPC metadata)');
    metadata[key] = value;
  }
  return metadata;
}
