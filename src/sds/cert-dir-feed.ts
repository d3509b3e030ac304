import type { Logger } from '../shared/log.ts';
import type { FileRead } from '../watch/cert-set.ts';
import { certFilesIn } from '../shared/istio-files.ts';
import { pemSecret } from './pem-secret.ts';
import { rootSecretName, workloadSecretName } from './resource-names.ts';
import type { SecretStore } from './secret-store.ts';

/** How a new consistent set of certificate files reaches Envoy. */
export type CertRotation = 'auto' | 'sds' | 'restart';

export interface CertDirFeedOptions {
  store: SecretStore;
  certDir: string;
  /** auto: hot-restart only for changed files no SDS stream delivers; sds: never; restart: always. */
  rotation: CertRotation;
  /** Files whose bytes some SDS stream currently holds. */
  coveredFiles: () => ReadonlySet<string>;
  /** Hands the set's hash to the reconcile loop: a new epoch. */
  restart: (hash: string) => void;
  logger: Logger;
  /** False when a CA feeds `default`/`ROOTCA`: the dir's files must not replace or remove them. */
  storesWorkload?: boolean;
  /** Files the agent writes itself (OUTPUT_CERTS, from the CA): Envoy has their certificate over SDS already, so they never restart it. */
  ownFiles?: ReadonlySet<string>;
}

/**
 * The certificate dir's consistent sets, routed: `default` and `ROOTCA` go to
 * the secret store (pushed to every SDS stream holding them), and the
 * reconcile loop hears of a set only when Envoy must restart to see it: the
 * first set, or a change to a file that no SDS stream delivers (Envoy reads
 * it from disk itself, as Istio 1.1's configs did).
 */
export function feedCertDir(options: CertDirFeedOptions): (hash: string, files: readonly FileRead[]) => void {
  let previous: readonly FileRead[] | undefined;
  return (hash, files) => {
    if (options.storesWorkload !== false) storeCertDir(options.store, options.certDir, files);
    const changed = previous ? changedPaths(previous, files) : undefined;
    previous = files;
    if (!changed) return options.restart(hash);
    const others = changed.filter((path) => !options.ownFiles?.has(path));
    if (others.length === 0 && changed.length > 0)
      return options.logger.info({ files: changed }, "certificate dir changed by the agent's own OUTPUT_CERTS write; no restart");
    const uncovered = restartNeededFor(options.rotation, others, options.coveredFiles());
    if (uncovered.length > 0) return options.restart(hash);
    options.logger.info({ files: changed }, 'certificate change delivered over SDS; no restart');
  };
}

/** The changed files that force a hot restart under `rotation`. */
export function restartNeededFor(rotation: CertRotation, changed: readonly string[], covered: ReadonlySet<string>): string[] {
  if (rotation === 'sds') return [];
  if (rotation === 'restart') return [...changed];
  return changed.filter((path) => !covered.has(path));
}

/** Paths whose content (or presence) differs between two reads of the same files. */
export function changedPaths(before: readonly FileRead[], after: readonly FileRead[]): string[] {
  const old = new Map(before.map((file) => [file.path, file.content]));
  return after.filter((file) => !sameBytes(old.get(file.path), file.content)).map((file) => file.path);
}

const sameBytes = (a: Buffer | undefined, b: Buffer | undefined) => (a && b ? a.equals(b) : a === b);

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
