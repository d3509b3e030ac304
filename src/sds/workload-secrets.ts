import type { FileRead } from '../watch/cert-set.ts';
import { certFilesIn } from '../shared/istio-files.ts';
import { pemSecret } from './pem-secret.ts';
import { rootSecretName, workloadSecretName } from './resource-names.ts';
import type { SecretStore } from './secret-store.ts';

/**
 * The workload's secrets, `default` and `ROOTCA`, from the certificate dir's
 * files or from the CA: what goes into the store is pushed to every SDS
 * stream holding the name. Whether a rotation also needs a new epoch is the
 * rotation owner's call (runtime/rotation.ts), not the store's.
 */

/** cert-chain.pem + key.pem are `default`, root-cert.pem is `ROOTCA`; absent files leave the names waiting. */
export function storeCertDir(store: SecretStore, certDir: string, files: readonly FileRead[]): void {
  const { chain, key, root } = certFilesIn(certDir);
  const content = (path: string) => files.find((file) => file.path === path)?.content;
  const [chainBytes, keyBytes, rootBytes] = [content(chain), content(key), content(root)];
  if (chainBytes && keyBytes) store.put(workloadSecretName, pemSecret({ kind: 'tls-certificate', chain: chainBytes, key: keyBytes }, [chain, key]));
  else store.remove(workloadSecretName, `no ${chain} and ${key} yet`);
  if (rootBytes) store.put(rootSecretName, pemSecret({ kind: 'validation-context', trustedCa: rootBytes }, [root]));
  else store.remove(rootSecretName, `no ${root} yet`);
}

/** A certificate the CA issued (checked): its chain and in-memory key are `default`, its root `ROOTCA`; no file behind either. */
export function storeIssued(store: SecretStore, issued: { chain: Buffer; key: Buffer; root: Buffer }): void {
  store.put(workloadSecretName, pemSecret({ kind: 'tls-certificate', chain: issued.chain, key: issued.key }, []));
  store.put(rootSecretName, pemSecret({ kind: 'validation-context', trustedCa: issued.root }, []));
}
