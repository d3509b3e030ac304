import { join } from 'node:path';
import type { ProxyType } from '../settings/proxy-type.ts';
import { certFilesIn } from '../shared/istio-files.ts';

export const ingressCertDir = '/etc/istio/ingress-certs';

/** A certificate file, with the private key that must match it when there is one. */
export interface CertGroup {
  cert: string;
  key?: string;
}

/** The certificate files whose content is the agent's desired config, grouped by key pair. */
export function watchedCertGroups(certDir: string, proxyType: ProxyType, ingressDir = ingressCertDir): CertGroup[] {
  const files = certFilesIn(certDir);
  const groups: CertGroup[] = [{ cert: files.chain, key: files.key }, { cert: files.root }];
  if (proxyType === 'ingress') groups.push({ cert: join(ingressDir, 'tls.crt'), key: join(ingressDir, 'tls.key') });
  return groups;
}

/** Every file of the groups, in a fixed order (the order the hash covers them in). */
export function groupPaths(groups: readonly CertGroup[]): string[] {
  return groups.flatMap((group) => (group.key ? [group.cert, group.key] : [group.cert]));
}

/** The certificate files, flat: sidecar files, then the ingress pair for `ingress`. */
export function watchedCertFiles(certDir: string, proxyType: ProxyType, ingressDir = ingressCertDir): string[] {
  return groupPaths(watchedCertGroups(certDir, proxyType, ingressDir));
}
