/**
 * Certificate rotation, one owner. Two sources: the certificate dir's watch
 * (each new consistent set of files) and the CA client (each certificate it
 * issues). Two ways to Envoy: an SDS push (into the secret store, which
 * sends it to every stream holding the name) or a new epoch (a hot restart,
 * asked of the loop). The rule:
 * - the CA's certificate: SDS only, never a new epoch;
 * - the first set of files: a new epoch (Envoy's first);
 * - a later set: a new epoch only for a changed file that no SDS stream
 *   delivers (Envoy reads it from disk itself, as Istio 1.1's configs did),
 *   never for the agent's own OUTPUT_CERTS write; `--certRotation sds`
 *   never, `restart` always (the streams are pushed too), and always when
 *   another process serves SDS.
 */
import { resolve } from 'node:path';
import type { IssuedCertificate } from '../ca/workload-certificates.ts';
import type { SdsRuntime } from '../sds/start.ts';
import type { SecretStore } from '../sds/secret-store.ts';
import { storeCertDir, storeIssued } from '../sds/workload-secrets.ts';
import { certFilesIn } from '../shared/istio-files.ts';
import type { Logger } from '../shared/log.ts';
import type { FileRead } from '../watch/cert-set.ts';
import { startCertWatch } from '../watch/start.ts';
import { stopsOnDispose, type RuntimeContext } from './context.ts';
import type { RequestEpoch } from './envoy-loop.ts';

/** How a new consistent set of certificate files reaches Envoy (--certRotation). */
export type CertRotation = 'auto' | 'sds' | 'restart';

export class Rotation {
  readonly #ctx: RuntimeContext;
  readonly #sds: Pick<SdsRuntime, 'store' | 'coveredFiles'>;
  readonly #caInUse: boolean;
  readonly #outputDir: string | undefined;

  /** `caInUse`: a CA issues the workload certificate; `outputDir`: OUTPUT_CERTS, where it writes it. */
  constructor(ctx: RuntimeContext, parts: { sds: Pick<SdsRuntime, 'store' | 'coveredFiles'>; caInUse: boolean; outputDir?: string }) {
    this.#ctx = ctx;
    this.#sds = parts.sds;
    this.#caInUse = parts.caInUse;
    this.#outputDir = parts.outputDir;
  }

  /** Where the CA's certificates go: over SDS only. Undefined when another process serves SDS (it gets its own). */
  caFeed(): ((certificate: IssuedCertificate) => void) | undefined {
    const store = this.#sds.store;
    if (!store) return undefined;
    return (certificate) =>
      storeIssued(store, { chain: Buffer.from(certificate.chain.join('')), key: Buffer.from(certificate.key), root: Buffer.from(certificate.root) });
  }

  /** Where the certificate dir's sets go: into the store, and to a new epoch when Envoy must restart to see them. */
  filesFeed(loop: { requestEpoch: RequestEpoch }): (hash: string, files: readonly FileRead[]) => void {
    const { config, logger } = this.#ctx;
    const store = this.#sds.store;
    const own = this.#outputDir === undefined ? undefined : new Set(Object.values(certFilesIn(resolve(this.#outputDir))));
    return feedCertDir({
      store,
      certDir: config.certDir,
      rotation: store ? config.certRotation : 'restart',
      coveredFiles: () => this.#sds.coveredFiles(),
      requestEpoch: (hash) => loop.requestEpoch(hash),
      logger: logger.child({ component: 'sds' }),
      storesWorkload: !this.#caInUse,
      ownFiles: own,
    });
  }

  /** Starts the certificate dir's watch into `filesFeed(loop)`: its first set (read at once) starts Envoy. */
  async watch(loop: { requestEpoch: RequestEpoch }): Promise<AsyncDisposable> {
    const ctx = this.#ctx;
    const context = { clock: ctx.clock, logger: ctx.logger.child({ component: 'certs' }), caInUse: this.#caInUse };
    const watch = await startCertWatch(ctx.config, context, this.filesFeed(loop));
    return stopsOnDispose(watch, () => watch.close());
  }
}

export interface CertDirFeedOptions {
  /** Where `default` and `ROOTCA` go; undefined when another process serves SDS. */
  store: SecretStore | undefined;
  certDir: string;
  /** auto: a new epoch only for changed files no SDS stream delivers; sds: never; restart: always. */
  rotation: CertRotation;
  /** Files whose bytes some SDS stream currently holds. */
  coveredFiles: () => ReadonlySet<string>;
  /** Asks the loop for a new epoch running this set (its hash). */
  requestEpoch: (hash: string) => void;
  logger: Logger;
  /** False when a CA feeds `default`/`ROOTCA`: the dir's files must not replace or remove them. */
  storesWorkload?: boolean;
  /** Files the agent writes itself (OUTPUT_CERTS, from the CA): Envoy has their certificate over SDS already, so they never restart it. */
  ownFiles?: ReadonlySet<string>;
}

/**
 * The certificate dir's consistent sets, routed: `default` and `ROOTCA` go to
 * the secret store (pushed to every SDS stream holding them), and the loop is
 * asked for a new epoch only when Envoy must restart to see the set.
 */
export function feedCertDir(options: CertDirFeedOptions): (hash: string, files: readonly FileRead[]) => void {
  let previous: readonly FileRead[] | undefined;
  return (hash, files) => {
    if (options.store && options.storesWorkload !== false) storeCertDir(options.store, options.certDir, files);
    const changed = previous ? changedPaths(previous, files) : undefined;
    previous = files;
    if (!changed) return options.requestEpoch(hash);
    const others = changed.filter((path) => !options.ownFiles?.has(path));
    if (others.length === 0 && changed.length > 0)
      return options.logger.info({ files: changed }, "certificate dir changed by the agent's own OUTPUT_CERTS write; no restart");
    const uncovered = restartNeededFor(options.rotation, others, options.coveredFiles());
    if (uncovered.length > 0) return options.requestEpoch(hash);
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
