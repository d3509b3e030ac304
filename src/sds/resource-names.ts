import { isAbsolute } from 'node:path';

/** Istio's names for the workload identity and the trust bundle (pkg/security). */
export const workloadSecretName = 'default';
export const rootSecretName = 'ROOTCA';

/** What a requested SDS resource name refers to. */
export type ResourceName =
  | { kind: 'cert-dir'; name: 'default' | 'ROOTCA' }
  | { kind: 'file-cert'; cert: string; key: string }
  | { kind: 'file-root'; path: string }
  | { kind: 'system-root' }
  | { kind: 'unknown'; reason: string };

const served = 'this agent serves default, ROOTCA, file-cert:<chain>~<key>, file-root:<path> and file-root:system';

/** Parses the names istiod puts in clusters and listeners (SdsCertificateConfig's resource names). */
export function parseResourceName(name: string): ResourceName {
  if (name === workloadSecretName || name === rootSecretName) return { kind: 'cert-dir', name };
  if (name === 'file-root:system') return { kind: 'system-root' };
  if (name.startsWith('file-root:')) return filePath(name.slice('file-root:'.length), (path) => ({ kind: 'file-root', path }));
  if (name.startsWith('file-cert:')) return fileCert(name.slice('file-cert:'.length));
  return { kind: 'unknown', reason: `unknown resource name; ${served}` };
}

function fileCert(rest: string): ResourceName {
  const parts = rest.split('~');
  if (parts.length !== 2) return { kind: 'unknown', reason: 'file-cert: takes <chain-path>~<key-path>' };
  return filePath(parts[0]!, (cert) => filePath(parts[1]!, (key) => ({ kind: 'file-cert', cert, key })));
}

/** Relative paths would depend on the agent's working directory: refuse them. */
function filePath(path: string, then: (path: string) => ResourceName): ResourceName {
  return isAbsolute(path) ? then(path) : { kind: 'unknown', reason: `file path ${JSON.stringify(path)} is not absolute` };
}

/** Where Linux distributions keep the OS trust bundle; the first that exists is `file-root:system`. */
export const systemRootPaths = [
  '/etc/ssl/certs/ca-certificates.crt',
  '/etc/pki/tls/certs/ca-bundle.crt',
  '/etc/ssl/ca-bundle.pem',
  '/etc/pki/tls/cacert.pem',
  '/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem',
  '/etc/ssl/cert.pem',
] as const;
