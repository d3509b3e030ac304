import { createHash } from 'node:crypto';
import { fetchResult, type WasmMetrics } from './metrics.ts';
import { mkdir, readdir, rm, stat, utimes } from 'node:fs/promises';
import { join } from 'node:path';
import type { Clock, Timer } from '../shared/clock.ts';
import type { Logger } from '../shared/log.ts';
import { writeAtomically } from '../shared/synced-file.ts';
import type { Fetched, ModuleRequest, PullPolicy } from './module-request.ts';
import { isWasm, unbox } from './unbox.ts';

export type { Fetched, ModuleRequest, PullPolicy } from './module-request.ts';

export interface ModuleCacheOptions {
  dir: string;
  /** A module unused this long is removed at the next purge (WASM_MODULE_EXPIRY). */
  expiryMs: number;
  purgeIntervalMs: number;
  clock: Clock;
  logger: Logger;
  fetch(request: ModuleRequest): Promise<Fetched>;
  /** Largest module accepted, unwrapped. */
  maxBytes: number;
  /** Cache lookups and remote fetches, by Istio's labels. */
  metrics?: Pick<WasmMetrics, 'cacheLookups' | 'remoteFetches'>;
}

interface Entry {
  lastUsed: number;
  urls: Set<string>;
}

const hex64 = /^[0-9a-f]{64}$/;

/** The module's name: for OCI the repository without tag or digest, else the URL. */
export function moduleName(url: string): string {
  if (!url.startsWith('oci://')) return url;
  return url.replace(/@sha256:[0-9a-f]+$/, '').replace(/:[^/:]+$/, '');
}

/** Whether a push may reuse the module found for an earlier version of its resource. */
function ignoresResourceVersion(policy: PullPolicy, url: string): boolean {
  if (policy === 'Always') return false;
  if (policy === 'IfNotPresent') return true;
  // Istio's default: only an OCI :latest tag is pulled again when the resource changes.
  return !(url.startsWith('oci://') && url.endsWith(':latest'));
}

/**
 * Wasm modules on disk, under <dir>/<sha256 of the module name>/<checksum>.wasm.
 * The disk is the index for modules whose checksum is known, so an agent
 * that restarts finds them again; which checksum a URL without one last gave
 * is remembered in memory, as Istio does. A module with a wrong checksum is
 * never written.
 */
export class ModuleCache {
  readonly #options: ModuleCacheOptions;
  readonly #entries = new Map<string, Entry>();
  /** url → the checksum it last gave, and the resource versions that saw it. */
  readonly #checksums = new Map<string, { checksum: string; versions: Map<string, string> }>();
  readonly #inFlight = new Map<string, Promise<string>>();
  /** url, checksum and pull secret → the fetch under way for them. */
  readonly #fetching = new Map<string, Promise<{ path: string; digest: string }>>();
  #timer: Timer | undefined;

  constructor(options: ModuleCacheOptions) {
    this.#options = options;
  }

  /** The purge the timer started last (tests wait for it). */
  lastPurge: Promise<void> = Promise.resolve();

  /** Purges every purge interval until stop(). */
  start(): void {
    const tick = () => {
      this.#timer = this.#options.clock.setTimeout(() => {
        this.lastPurge = this.purge().catch((error: Error) => this.#options.logger.warn({ err: error }, 'Wasm cache purge failed')).finally(tick);
      }, this.#options.purgeIntervalMs);
    };
    tick();
  }

  stop(): void {
    this.#timer?.cancel();
  }

  /** The local file holding the module; fetches it when it is not cached. */
  async get(request: ModuleRequest): Promise<string> {
    const key = `${request.url} ${request.checksum} ${request.resourceName} ${request.resourceVersion}`;
    const running = this.#inFlight.get(key);
    if (running) return running;
    const done = this.#get(request).finally(() => this.#inFlight.delete(key));
    this.#inFlight.set(key, done);
    return done;
  }

  /** Modules the cache knows (Istio's wasm_cache_entries). */
  get size(): number {
    return this.#entries.size;
  }

  async #get(request: ModuleRequest): Promise<string> {
    const { metrics } = this.#options;
    const checksum = this.#knownChecksum(request);
    if (checksum) {
      const hit = await this.#lookup(request.url, checksum);
      metrics?.cacheLookups.inc({ hit: String(Boolean(hit)) });
      if (hit) return hit;
    }
    const { path, digest } = await this.#fetchOnce(request, checksum);
    this.#remember(request, digest);
    return path;
  }

  /**
   * One fetch and one write per module: filters that name the same URL (and
   * checksum, and pull secret) while it is being fetched share that fetch,
   * whatever their resource names.
   */
  #fetchOnce(request: ModuleRequest, checksum: string | undefined): Promise<{ path: string; digest: string }> {
    const key = JSON.stringify([request.url, checksum ?? '', request.pullSecret ?? '']);
    const running = this.#fetching.get(key);
    if (running) return running;
    const done = this.#fetchAndWrite(request, checksum).finally(() => this.#fetching.delete(key));
    this.#fetching.set(key, done);
    return done;
  }

  async #fetchAndWrite(request: ModuleRequest, checksum: string | undefined): Promise<{ path: string; digest: string }> {
    const { metrics } = this.#options;
    const fetched = await this.#options.fetch(request).catch((error: unknown) => {
      metrics?.remoteFetches.inc({ result: fetchResult.downloadFailure });
      throw error;
    });
    if (checksum && fetched.digest !== checksum) {
      metrics?.remoteFetches.inc({ result: fetchResult.checksumMismatch });
      throw new Error(`module from ${request.url} has checksum ${fetched.digest}, not ${checksum}`);
    }
    metrics?.remoteFetches.inc({ result: fetchResult.success });
    if (!checksum) {
      // OCI told the digest before the blob: it may be cached under it already.
      const hit = await this.#lookup(request.url, fetched.digest);
      if (hit) return { path: hit, digest: fetched.digest };
    }
    const module = await unbox(await fetched.module(), this.#options.maxBytes);
    if (!isWasm(module)) throw new Error(`module from ${request.url} is not a Wasm binary`);
    return { path: await this.#write(request.url, fetched.digest, module), digest: fetched.digest };
  }

  /** The checksum to look for: the plugin's, an OCI digest in the URL, or the one this URL gave before. */
  #knownChecksum(request: ModuleRequest): string | undefined {
    const given = request.checksum.toLowerCase();
    if (given) return given;
    const pinned = /@sha256:([0-9a-f]{64})$/.exec(request.url)?.[1];
    if (pinned) return pinned;
    const seen = this.#checksums.get(request.url);
    if (!seen) return undefined;
    const sameVersion = seen.versions.get(request.resourceName) === request.resourceVersion;
    seen.versions.set(request.resourceName, request.resourceVersion);
    return ignoresResourceVersion(request.pullPolicy, request.url) || sameVersion ? seen.checksum : undefined;
  }

  #remember(request: ModuleRequest, checksum: string): void {
    const seen = this.#checksums.get(request.url) ?? { checksum, versions: new Map() };
    seen.checksum = checksum;
    seen.versions.set(request.resourceName, request.resourceVersion);
    this.#checksums.set(request.url, seen);
  }

  #pathOf(url: string, checksum: string): string {
    const folder = createHash('sha256').update(moduleName(url)).digest('hex');
    return join(this.#options.dir, folder, `${checksum}.wasm`);
  }

  /** A cached module (in memory or left on disk by an earlier run), marked used now. */
  async #lookup(url: string, checksum: string): Promise<string | undefined> {
    if (!hex64.test(checksum)) return undefined;
    const path = this.#pathOf(url, checksum);
    const entry = this.#entries.get(path);
    if (!entry) {
      // Only a regular file is a module (a directory in its place is not).
      const isFile = await stat(path).then((info) => info.isFile(), () => false);
      if (!isFile) return undefined;
      this.#options.logger.debug({ path, url }, 'Wasm module found on disk');
    }
    await this.#touch(path, url);
    return path;
  }

  async #touch(path: string, url: string): Promise<void> {
    const now = this.#options.clock.now();
    const entry = this.#entries.get(path) ?? { lastUsed: now, urls: new Set<string>() };
    entry.lastUsed = now;
    entry.urls.add(url);
    this.#entries.set(path, entry);
    // The file's mtime is its last use: a restarted agent expires it from there.
    await utimes(path, now / 1000, now / 1000).catch(() => undefined);
  }

  async #write(url: string, checksum: string, module: Buffer): Promise<string> {
    const path = this.#pathOf(url, checksum);
    await mkdir(join(path, '..'), { recursive: true, mode: 0o755 });
    // Synced before the rename: after a restart a file under its checksum's name is trusted as it is.
    await writeAtomically(path, module, 0o644);
    await this.#touch(path, url);
    this.#options.logger.info({ url, path, bytes: module.length }, 'Wasm module fetched and cached');
    return path;
  }

  async #removeIfOlder(path: string, now: number): Promise<void> {
    const modified = await stat(path).then((info) => info.mtimeMs, () => now);
    if (now - modified > this.#options.expiryMs) await rm(path, { force: true });
  }

  /** Removes modules unused for longer than the expiry, found in memory or on disk. */
  async purge(): Promise<void> {
    const now = this.#options.clock.now();
    let folders: string[];
    try {
      folders = await readdir(this.#options.dir);
    } catch {
      return;
    }
    for (const folder of folders) {
      const files = await readdir(join(this.#options.dir, folder)).catch(() => [] as string[]);
      // A temporary a killed agent left mid-write (each write has its own name) goes with the expiry too.
      for (const file of files.filter((name) => name.endsWith('.tmp'))) await this.#removeIfOlder(join(this.#options.dir, folder, file), now);
      for (const file of files.filter((name) => name.endsWith('.wasm'))) {
        const path = join(this.#options.dir, folder, file);
        const lastUsed = this.#entries.get(path)?.lastUsed ?? (await stat(path).then((info) => info.mtimeMs, () => now));
        if (now - lastUsed <= this.#options.expiryMs) continue;
        await rm(path, { force: true });
        for (const url of this.#entries.get(path)?.urls ?? []) this.#checksums.delete(url);
        this.#entries.delete(path);
        this.#options.logger.info({ path }, 'expired Wasm module removed');
      }
    }
  }
}
