import { performance } from 'node:perf_hooks';
import { LookupTable, type PodDomain } from './lookup-table.ts';
import { nameTableEntries, readNameEntry } from './name-table-wire.ts';

/** Entries read and built between two turns of the event loop (~2 ms), so queries keep being answered. */
const batchSize = 500;

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
}

/**
 * The name table the DNS server answers from. A new NameTable is decoded
 * and built in batches, yielding between them, and swapped in whole once
 * built: queries never see half a table, and 100,000 names never hold the
 * event loop for long. A table that does not parse is refused (a NACK) and
 * the previous one stays.
 */
export class TableStore {
  readonly #pod: PodDomain;
  readonly #now: () => number;
  #loaded: Loaded | undefined;
  /** Tables come in order; a newer one waits for the one being built. */
  #building: Promise<unknown> = Promise.resolve();
  readonly #listeners = new Set<() => void>();

  constructor(options: { pod: PodDomain; now: () => number }) {
    this.#pod = options.pod;
    this.#now = options.now;
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
    const table = new LookupTable(this.#pod);
    let skipped = 0;
    let entries = 0;
    // Measured with the monotonic clock: a step is a few ms, finer than the injected clock's.
    const started = performance.now();
    let stepStarted = started;
    let longestStepMs = 0;
    for (const entry of nameTableEntries(bytes)) {
      if (++entries % batchSize === 0) {
        longestStepMs = Math.max(longestStepMs, performance.now() - stepStarted);
        await new Promise((resolve) => setImmediate(resolve));
        stepStarted = performance.now();
      }
      const [host, info] = readNameEntry(entry);
      if (!table.add(host, info)) skipped++;
    }
    longestStepMs = Math.max(longestStepMs, performance.now() - stepStarted);
    const round = (ms: number) => Math.round(ms * 10) / 10;
    this.#loaded = { table, version, source, at: this.#now(), entries, bytes: bytes.length, skipped, raw: bytes, buildMs: round(performance.now() - started), longestStepMs: round(longestStepMs) };
    for (const listener of this.#listeners) listener();
  }

  debug(withHosts: boolean): TableDebug & { table?: Record<string, string[]> } {
    const loaded = this.#loaded;
    if (!loaded) return { loaded: false };
    const { version, source, at, entries, bytes, skipped, table, buildMs, longestStepMs } = loaded;
    const summary = { loaded: true, version, source, receivedAt: new Date(at).toISOString(), ageSeconds: Math.round((this.#now() - at) / 1000), entries, names: table.size, bytes, skipped, buildMs, longestStepMs };
    return withHosts ? { ...summary, table: Object.fromEntries([...nameTableEntries(loaded.raw)].map((entry) => readNameEntry(entry)).map(([host, info]) => [host, info.ips])) } : summary;
  }
}
