import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ProxyType } from '../role/role.ts';

export const sidecarCertFiles = ['cert-chain.pem', 'key.pem', 'root-cert.pem'] as const;
export const ingressCertDir = '/etc/istio/ingress-certs';
export const ingressCertFiles = ['tls.crt', 'tls.key'] as const;

/** The certificate files whose content is the agent's desired config. */
export function watchedCertFiles(certDir: string, proxyType: ProxyType, ingressDir = ingressCertDir): string[] {
  const files = sidecarCertFiles.map((name) => join(certDir, name));
  if (proxyType === 'ingress') files.push(...ingressCertFiles.map((name) => join(ingressDir, name)));
  return files;
}

/**
 * SHA-256 over the files' contents, in order; a missing file counts as
 * absent (Envoy may run without certs, e.g. plaintext to the control plane).
 */
export async function hashFiles(paths: readonly string[]): Promise<string> {
  const hash = createHash('sha256');
  for (const path of paths) {
    const content = await readFile(path).catch(() => undefined);
    hash.update(`${path}\0${content ? content.length : -1}\0`);
    if (content) hash.update(content);
  }
  return hash.digest('hex');
}
