import { access } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Clock } from '../shared/clock.ts';
import type { Logger } from '../shared/log.ts';
import type { CertGroup } from '../watch/cert-files.ts';
import type { FileRead } from '../watch/cert-set.ts';
import { CertWatch } from '../watch/cert-watch.ts';
import { ChokidarSource } from '../watch/chokidar-source.ts';
import type { SdsMetrics } from './metrics.ts';
import { LogBudget } from './log-budget.ts';
import { pemSecret } from './pem-secret.ts';
import { parseResourceName, systemRootPaths } from './resource-names.ts';
import type { SecretStore } from './secret-store.ts';
import type { Subscriptions } from './sds-stream.ts';

export interface FileSourcesOptions {
  store: SecretStore;
  clock: Clock;
  logger: Logger;
  metrics: SdsMetrics;
  debounceMs: number;
  resyncMs: number;
  /** Candidates for `file-root:system`, first existing wins. */
  systemRoots?: readonly string[];
  /** Tests lower it; maxFileWatches otherwise. */
  maxWatches?: number;
}

interface Held {
  count: number;
  watch?: Promise<CertWatch | undefined>;
  /** Counted against maxFileWatches. */
  counted?: boolean;
}

/**
 * File-backed names watched at once, over every stream: each is a watch
 * (inotify, timers), so a local client must not start them without end.
 * Names past it wait with the reason in /debug/sds.
 */
export const maxFileWatches = 256;

/**
 * Feeds the store with the file-backed names (`file-cert:`, `file-root:`)
 * while some stream holds them: each is a CertWatch of its own, so the same
 * consistency check guards them and the bytes served are the bytes checked.
 * `default` and `ROOTCA` come from the certificate dir's watch instead.
 */
export class FileSecretSources implements Subscriptions {
  readonly #options: FileSourcesOptions;
  readonly #held = new Map<string, Held>();
  readonly #logBudget: LogBudget;
  #watches = 0;

  constructor(options: FileSourcesOptions) {
    this.#options = options;
    this.#logBudget = new LogBudget({ lines: 10, windowMs: 10_000, now: () => options.clock.now() });
  }

  acquire(name: string): void {
    const held = this.#held.get(name) ?? { count: 0 };
    this.#held.set(name, held);
    if (held.count++ > 0) return;
    if (isFileBacked(name)) {
      const max = this.#options.maxWatches ?? maxFileWatches;
      if (this.#watches >= max) return this.#refuse(name, 'watch_limit', `more than ${max} file-backed secrets are held; this one is not watched`);
      held.counted = true;
      this.#watches++;
    }
    held.watch = this.#start(name, held);
  }

  release(name: string): void {
    const held = this.#held.get(name);
    if (!held || --held.count > 0) return;
    this.#held.delete(name);
    if (held.counted) this.#watches--;
    // What nobody holds is not kept: a client naming ever new files must not grow the store.
    if (parseResourceName(name).kind !== 'cert-dir') this.#options.store.forget(name);
    void held.watch?.then((watch) => watch?.close());
  }

  async close(): Promise<void> {
    const watches = [...this.#held.values()].map((held) => held.watch);
    this.#held.clear();
    await Promise.all(watches.map((watch) => watch?.then((started) => started?.close())));
  }

  async #start(name: string, held: Held): Promise<CertWatch | undefined> {
    const group = await this.#group(name);
    if (!group) return undefined;
    const { clock, debounceMs, resyncMs, logger } = this.#options;
    const paths = group.key ? [group.cert, group.key] : [group.cert];
    const watch = new CertWatch({
      groups: [group], source: new ChokidarSource(paths.map((path) => dirname(path))), clock, debounceMs, resyncMs,
      logger: logger.child({ resource: name }),
      onConfig: (_hash, files) => this.#loaded(name, group, files),
      onProblem: (problem) => this.#refuse(name, 'bad_files', `${problem.file} ${problem.reason}`),
    });
    await watch.start();
    // Released while starting (and maybe held again since, by a watch of its own).
    if (this.#held.get(name) !== held) await watch.close();
    return watch;
  }

  /** The files behind `name`, or undefined (with the reason stored) when there are none to watch. */
  async #group(name: string): Promise<CertGroup | undefined> {
    const parsed = parseResourceName(name);
    if (parsed.kind === 'cert-dir') return undefined;
    if (parsed.kind === 'unknown') return void this.#refuse(name, 'unknown_resource', parsed.reason);
    if (parsed.kind === 'file-cert') return { cert: parsed.cert, key: parsed.key };
    if (parsed.kind === 'file-root') return { cert: parsed.path };
    const path = await firstExisting(this.#options.systemRoots ?? systemRootPaths);
    if (!path)
      return void this.#refuse(name, 'bad_files', `no OS trust bundle found (looked for ${(this.#options.systemRoots ?? systemRootPaths).join(', ')})`);
    return { cert: path };
  }

  #loaded(name: string, group: CertGroup, files: readonly FileRead[]): void {
    const missing = files.find((file) => !file.content);
    if (missing) return this.#refuse(name, 'bad_files', `${missing.path} does not exist`);
    const content = (path: string) => files.find((file) => file.path === path)!.content!;
    const material = group.key
      ? { kind: 'tls-certificate' as const, chain: content(group.cert), key: content(group.key) }
      : { kind: 'validation-context' as const, trustedCa: content(group.cert) };
    this.#options.store.put(name, pemSecret(material, files.map((file) => file.path)));
  }

  /** Envoy cannot be told why over SotW: the stream waits, and the reason is logged, counted and shown. */
  #refuse(name: string, reason: 'unknown_resource' | 'bad_files' | 'watch_limit', detail: string): void {
    this.#options.store.setProblem(name, detail);
    this.#options.metrics.errors.inc({ reason });
    const budget = this.#logBudget.take();
    if (budget) this.#options.logger.warn({ resource: name, reason: detail, ...budget }, 'cannot serve SDS resource; the stream waits for it');
  }
}

function isFileBacked(name: string): boolean {
  const kind = parseResourceName(name).kind;
  return kind === 'file-cert' || kind === 'file-root' || kind === 'system-root';
}

async function firstExisting(paths: readonly string[]): Promise<string | undefined> {
  for (const path of paths) if (await access(path).then(() => true, () => false)) return path;
  return undefined;
}
