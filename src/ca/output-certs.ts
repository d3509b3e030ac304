import { chmod, mkdir, mkdtemp, readdir, readlink, rename, rm, symlink } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { certFileNames } from '../shared/istio-files.ts';
import { writeSyncedFile } from '../shared/synced-file.ts';

export interface OutputCertificate {
  key: string;
  chain: string;
  root: string;
}

/** As Kubernetes' secret volumes: `..data` points at the current version's directory. */
const dataLink = '..data';
const versionPrefix = '..version-';

/** One write at a time per directory: two renewals close together must not interleave their swaps. */
const queues = new Map<string, Promise<void>>();

/**
 * Writes key, chain and root as one version and swaps them in at once, as
 * Kubernetes' AtomicWriter does for secret volumes: the three files go to a
 * new `..version-*` directory (0700, files 0600, synced), `..data` is
 * re-pointed at it by one rename of a symlink, and `key.pem`,
 * `cert-chain.pem`, `root-cert.pem` are symlinks through `..data`. A reader
 * that resolves `..data` once and reads the files under it never sees a key
 * of one version with the chain of another. The version before stays until
 * the next write, so a reader that resolved it just before the swap still
 * finds its files.
 */
export function writeOutputCerts(dir: string, certificate: OutputCertificate, shared = false): Promise<void> {
  const next = (queues.get(dir) ?? Promise.resolve()).catch(() => undefined).then(() => writeVersion(dir, certificate, shared));
  queues.set(dir, next);
  void next.finally(() => queues.get(dir) === next && queues.delete(dir)).catch(() => undefined);
  return next;
}

/**
 * `shared`: readable by the pod's other users (directories 0755, files 0644),
 * as Istio writes them on Kubernetes for an app that does not run as the
 * proxy's user (proxyless gRPC); otherwise the agent's own (0700, 0600).
 */
async function writeVersion(dir: string, certificate: OutputCertificate, shared: boolean): Promise<void> {
  const [dirMode, fileMode] = shared ? [0o755, 0o644] : [0o700, 0o600];
  await mkdir(dir, { recursive: true, mode: dirMode });
  const previous = await readlink(join(dir, dataLink)).catch(() => undefined);
  const version = await mkdtemp(join(dir, versionPrefix));
  if (shared) await Promise.all([chmod(dir, dirMode), chmod(version, dirMode)]);
  for (const [field, name] of Object.entries(certFileNames) as [keyof OutputCertificate, string][])
    await writeSyncedFile(join(version, name), certificate[field], 'wx', fileMode);
  await swapLink(join(dir, dataLink), basename(version));
  // Once: the top-level names become links through ..data (a file an older agent wrote is replaced whole).
  for (const name of Object.values(certFileNames)) {
    const target = await readlink(join(dir, name)).catch(() => undefined);
    if (target !== join(dataLink, name)) await swapLink(join(dir, name), join(dataLink, name));
  }
  await removeOldVersions(dir, [basename(version), previous]);
}

/** A symlink made beside `path` and renamed over it: whoever opens `path` gets the old target or the new. */
async function swapLink(path: string, target: string): Promise<void> {
  const temporary = `${path}.tmp-${process.pid}`;
  await rm(temporary, { force: true });
  await symlink(target, temporary);
  await rename(temporary, path);
}

/** Versions other than the current and the one before it. */
async function removeOldVersions(dir: string, keep: (string | undefined)[]): Promise<void> {
  for (const entry of await readdir(dir)) {
    if (entry.startsWith(versionPrefix) && !keep.includes(entry)) await rm(join(dir, entry), { recursive: true, force: true });
  }
}
