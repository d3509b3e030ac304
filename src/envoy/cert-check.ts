import { access, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { CertGroup } from '../watch/cert-files.ts';

/**
 * Whether Envoy can load a certificate set, asked of Envoy itself: the
 * bootstrap names the files only when a static listener does, but the
 * discovery server may send listeners that name them (Istio 1.1 did). A
 * child that refuses them there NACKs the listener, goes LIVE without it,
 * and its parent's drain then takes the port away. So each file is loaded
 * through a throwaway cluster and `--mode validate`.
 */
export function certCheckBootstrap(groups: readonly CertGroup[]): string {
  const clusters = groups.map((group, index) => ({
    name: `cert_check_${index}`,
    type: 'STATIC',
    load_assignment: {
      cluster_name: `cert_check_${index}`,
      endpoints: [{ lb_endpoints: [{ endpoint: { address: { socket_address: { address: '127.0.0.1', port_value: 1 } } } }] }],
    },
    transport_socket: {
      name: 'envoy.transport_sockets.tls',
      typed_config: { '@type': 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext', common_tls_context: tlsFiles(group) },
    },
  }));
  return JSON.stringify({ node: { id: 'cert-check', cluster: 'cert-check' }, static_resources: { clusters } });
}

function tlsFiles(group: CertGroup): Record<string, unknown> {
  if (!group.key) return { validation_context: { trusted_ca: { filename: group.cert } } };
  return { tls_certificates: [{ certificate_chain: { filename: group.cert }, private_key: { filename: group.key } }] };
}

/**
 * The groups to check: those with a file there now, plus those the serving
 * epoch had (a file that was served and is gone would break a listener that
 * names it, so it is checked, and refused, too).
 */
export async function groupsToCheck(groups: readonly CertGroup[], serving: readonly CertGroup[]): Promise<CertGroup[]> {
  const present = await Promise.all(groups.map(async (group) => (await exists(group.cert)) || (group.key !== undefined && (await exists(group.key)))));
  return groups.filter((group, index) => present[index] || serving.some((had) => had.cert === group.cert));
}

/** Writes the check bootstrap next to the epochs' own and returns its path. */
export async function writeCertCheck(configPath: string, groups: readonly CertGroup[]): Promise<string> {
  const path = join(configPath, 'envoy-cert-check.json');
  await writeFile(path, certCheckBootstrap(groups), { mode: 0o600 });
  return path;
}

const exists = (path: string) => access(path).then(() => true, () => false);
