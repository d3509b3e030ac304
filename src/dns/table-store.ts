import { performance } from 'node:perf_hooks';
import { LookupTable, type PodDomain } from './lookup-table.ts';
import { nameTableEntries, nameTableEntriesAt, readNameEntry } from './name-table-wire.ts';

/**
 * How long a build runs before it lets the event loop turn (ms): queries
 * wait at most about this long while a table is built. Measured by the
 * clock, not counted in names: a loaded machine (or a GC) makes a fixed
 * count of names take many times longer.
 */
export const defaultSliceMs = 2;

/**
 * A build that takes longer than this in all (its slices and the turns
 * between) is given up and the table refused (a NACK), the old one kept:
 * 400,000 names build in about 2 s, so only a table made to be slow (or a
 * machine far past its means) gets there, and it cannot hold a build, and
 * every table queued behind it, for good.
 */
export const defaultMaxBuildMs = 30_000;

export interface TableStoreOptions {
  pod: PodDomain;
  /** Wall clock, for the table's age. */
  now: () => number;
  /** See defaultSliceMs; Infinity builds a table in one go (the bench's baseline). */
  sliceMs?: number;
  /** See defaultMaxBuildMs. */
  maxBuildMs?: number;
  /** The monotonic clock slices are measured by (default performance.now; tests pass a fake). */
  monotonic?: () => number;
  /** Lets the event loop turn between two slices (default setImmediate; tests pass a fake). */
  yieldToLoop?: () => Promise<void>;
}

const setImmediateTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

export interface TableDebug {
  loaded: boolean;
  version?: string;
  /** Where the table came from: the discovery server, or the file kept from an earlier run. */
  source?: 'nds' | 'kept';
  receivedAt?: string;
  ageSeconds?: number;
  /** NameTable entries, and the names answered (Kubernetes short forms included; search-domain twins are worked out per query). */
  entries?: number;
  names?: number;
  bytes?: number;
  skipped?: number;
  /** How long the build took, and its longest step between two event-loop turns (ms): what queries waited at most. */
  buildMs?: number;
  longestStepMs?: number;
  /** How many steps the build took. */
  slices?: number;
}

interface Loaded {
  table: LookupTable;
  version: string;
  source: 'nds' | 'kept';
  at: number;
  entries: number;
  bytes: number;
  skipped: number;
  /** The NameTable as it came: /debug/ndsz decodes its hosts from it when asked. */
  raw: Buffer;
  buildMs: number;
  longestStepMs: number;
  slices: number;
}

/**
 * The name table the DNS server answers from. A new NameTable is decoded
 * and built into a table of its own in slices of about `sliceMs`, letting
 * the event loop turn between them, while queries are answered from the
 * old table; the new one replaces it in one assignment once whole: queries
 * never see half a table, and 100,000 names never hold the event loop for
 * long. A table that does not parse is refused (a NACK) and the previous
 * one stays.
 */
export class TableStore {
  readonly #pod: PodDomain;
  readonly #now: () => number;
  readonly #sliceMs: number;
  readonly #maxBuildMs: number;
  readonly #monotonic: () => number;
  readonly #yieldToLoop: () => Promise<void>;
  #loaded: Loaded | undefined;
  /** Tables come in order; a newer one waits for the one being built. */
  #building: Promise<unknown> = Promise.resolve();
  readonly #listeners = new Set<() => void>();

  constructor(options: TableStoreOptions) {
    this.#pod = options.pod;
    this.#now = options.now;
    this.#sliceMs = options.sliceMs ?? defaultSliceMs;
    this.#maxBuildMs = options.maxBuildMs ?? defaultMaxBuildMs;
    this.#monotonic = options.monotonic ?? (() => performance.now());
    this.#yieldToLoop = options.yieldToLoop ?? setImmediateTurn;
  }

  get table(): LookupTable | undefined {
    return this.#loaded?.table;
  }

  /** Calls `listener` after each table is swapped in. */
  onLoad(listener: () => void): void {
    this.#listeners.add(listener);
  }

  /** Builds and swaps in a NameTable's bytes; rejects (leaving the old table) when they do not parse. */
  load(bytes: Buffer, version: string, source: 'nds' | 'kept'): Promise<void> {
    const next = this.#building.then(() => this.#build(bytes, version, source));
    this.#building = next.catch(() => undefined);
    return next;
  }

  async #build(bytes: Buffer, version: string, source: 'nds' | 'kept'): Promise<void> {
    // Every Envoy stream (two during a hot restart, a new one after each reconnect) gets the table: the same one is not rebuilt.
    if (this.#loaded?.raw.equals(bytes)) {
      this.#loaded = { ...this.#loaded, version, source, at: this.#now() };
      return;
    }
    const table = new LookupTable(this.#pod, bytes);
    const filled = await this.#fill(table, bytes);
    // The swap: until this line every query was answered from the old table.
    this.#loaded = { table, version, source, at: this.#now(), bytes: bytes.length, raw: bytes, ...filled };
    for (const listener of this.#listeners) listener();
  }

  /** Adds every entry to `table`, yielding to the loop every sliceMs; a build past maxBuildMs is refused. */
  async #fill(table: LookupTable, bytes: Buffer) {
    let skipped = 0;
    let entries = 0;
    const clock = this.#monotonic;
    const started = clock();
    let stepStarted = started;
    let longestStepMs = 0;
    let slices = 1;
    for (const [at, entry] of nameTableEntriesAt(bytes)) {
      // The clock is read for every name: a small fraction of what a name takes (docs/benchmarks.md).
      if (clock() - stepStarted >= this.#sliceMs) {
        longestStepMs = Math.max(longestStepMs, clock() - stepStarted);
        if (clock() - started > this.#maxBuildMs) throw new Error(`building the table took more than ${this.#maxBuildMs} ms (${entries} entries); refused`);
        await this.#yieldToLoop();
        slices++;
        stepStarted = clock();
      }
      entries++;
      const [host, info] = readNameEntry(entry);
      if (!table.add(host, info, at)) skipped++;
    }
    longestStepMs = Math.max(longestStepMs, clock() - stepStarted);
    const round = (ms: number) => Math.round(ms * 100) / 100;
    return { entries, skipped, buildMs: round(clock() - started), longestStepMs: round(longestStepMs), slices };
  }

  debug(withHosts: boolean): TableDebug & { table?: Record<string, string[]> } {
    const loaded = this.#loaded;
    if (!loaded) return { loaded: false };
    const { version, source, at, entries, bytes, skipped, table, buildMs, longestStepMs, slices } = loaded;
    const summary = {
      loaded: true,
      version,
      source,
      receivedAt: new Date(at).toISOString(),
      ageSeconds: Math.round((this.#now() - at) / 1000),
      entries,
      names: table.size,
      bytes,
      skipped,
      buildMs,
      longestStepMs,
      slices,
    };
    return withHosts
      ? {
          ...summary,
          table: Object.fromEntries([...nameTableEntries(loaded.raw)].map((entry) => readNameEntry(entry)).map(([host, info]) => [host, info.ips])),
        }
      : summary;
  }
}
