import { LookupTable, type PodDomain } from './lookup-table.ts';
import { nameTableEntries, readNameEntry } from './name-table-wire.ts';

/** Entries built between two turns of the event loop: ~1 ms each, so queries keep being answered. */
const batchSize = 2_000;

export interface TableDebug {
  loaded: boolean;
  version?: string;
  /** Where the table came from: the discovery server, or the file kept from an earlier run. */
  source?: 'nds' | 'kept';
  receivedAt?: string;
  ageSeconds?: number;
  /** NameTable entries, and the names answered (short forms and search-domain twins included). */
  entries?: number;
  names?: number;
  bytes?: number;
  skipped?: number;
}

interface Loaded {
  table: LookupTable;
  version: string;
  source: 'nds' | 'kept';
  at: number;
  entries: number;
  bytes: number;
  skipped: number;
  /** The table's hosts with their addresses, for /debug/ndsz. */
  hosts: Map<string, string[]>;
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
    const entries = nameTableEntries(bytes);
    const table = new LookupTable(this.#pod);
    const hosts = new Map<string, string[]>();
    let skipped = 0;
    for (let at = 0; at < entries.length; at += batchSize) {
      if (at > 0) await new Promise((resolve) => setImmediate(resolve));
      for (const entry of entries.slice(at, at + batchSize)) {
        const [host, info] = readNameEntry(entry);
        if (table.add(host, info)) hosts.set(host, info.ips);
        else skipped++;
      }
    }
    this.#loaded = { table, version, source, at: this.#now(), entries: entries.length, bytes: bytes.length, skipped, hosts };
    for (const listener of this.#listeners) listener();
  }

  debug(withHosts: boolean): TableDebug & { table?: Record<string, string[]> } {
    const loaded = this.#loaded;
    if (!loaded) return { loaded: false };
    const { version, source, at, entries, bytes, skipped, table } = loaded;
    const summary = { loaded: true, version, source, receivedAt: new Date(at).toISOString(), ageSeconds: Math.round((this.#now() - at) / 1000), entries, names: table.size, bytes, skipped };
    return withHosts ? { ...summary, table: Object.fromEntries(loaded.hosts) } : summary;
  }
}
