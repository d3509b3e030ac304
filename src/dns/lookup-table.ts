import { randomInt } from 'node:crypto';
import { isIP } from 'node:net';
import { entryAt, readNameEntry, type NameInfo } from './name-table-wire.ts';

/** What the pod knows of itself, for Kubernetes short names and the first search domain. */
export interface PodDomain {
  /** POD_NAMESPACE. */
  namespace: string;
  /** The proxy's DNS domain (`<ns>.svc.cluster.local`); the namespace in front is dropped. */
  domain: string;
  /** resolv.conf's search list. */
  search: string[];
}

/** One name's answers: addresses shared by every name built from one NameTable entry. */
export interface LookupEntry {
  v4?: string[];
  v6?: string[];
  /** A search-domain expansion: answered with a CNAME to this name. */
  cname?: string;
}

/** Where a name's entry starts in the NameTable's bytes, or (a table built without them) the entry and the names it gives. */
type Slot = number | { names: Set<string>; entry: LookupEntry };
/** The names of one hash: one slot (nearly always), a short chain, or past `maxChain` a map by name. */
type Bucket = Slot | Slot[] | Map<string, Slot>;

/**
 * Past this, a chain becomes a Map by name: names crafted to share a hash (a ServiceEntry
 * feeds the table) cost one map step each, not a walk (8,192 made a 28.8 s quadratic build).
 */
const maxChain = 8;

export interface LookupTableOptions {
  /** Tests: the hash names are filed by (default: FNV-1a with a seed drawn per table, so no name list collides on every agent). */
  hash?: (name: string) => number;
}

/**
 * The names the agent answers, built the way Istio's agent builds them
 * (`pkg/dns/client/dns.go`): a Kubernetes service also answers as `name.ns`,
 * `name.ns.svc` and, in the pod's own namespace, `name`; every name has a
 * CNAME twin under the first search domain, so a resolver walking the search
 * list gets to the real name in one step. Keys are lower case, ending in a dot.
 */
export class LookupTable {
  /**
   * Names by a hash of them, each to where its entry starts in the
   * NameTable's bytes (`source`), or (a table built without bytes) to the
   * entry itself. A query hashes the name and checks it against the names
   * its candidates give (read again from the bytes, a few µs). Numbers both
   * ways are no objects for the GC: 200,000 names kept as strings and
   * objects made its pauses the longest stalls of a build.
   */
  readonly #slots = new ShardedMap<Bucket>();
  #size = 0;
  #probes = 0;
  readonly #hash: (name: string) => number;
  readonly #source: Buffer | undefined;
  readonly #domain: { namespace: string; domain: string; parts: string[]; firstSearch: string | undefined };

  /** `source`: the NameTable the entries' offsets point into (see add). */
  constructor(pod: PodDomain, source?: Buffer, options: LookupTableOptions = {}) {
    this.#source = source;
    const seed = randomInt(2 ** 32);
    this.#hash = options.hash ?? ((name) => hashOf(name, seed));
    const parts = pod.domain.split('.').filter(Boolean);
    if (parts[0] === pod.namespace) parts.shift();
    const first = pod.search[0];
    const firstSearch = first && (first.endsWith('.') ? first : `${first}.`).toLowerCase();
    this.#domain = { namespace: pod.namespace, domain: parts.join('.'), parts, firstSearch };
  }

  get size(): number {
    return this.#size;
  }

  /** How many times a candidate's names were checked against a name: the build's cost in steps, for the flood test. */
  get probes(): number {
    return this.#probes;
  }

  /**
   * The entry of a name, or for a known name's twin under the first search
   * domain (`db.legacy.internal.default.svc.cluster.local.`) a CNAME to it.
   * Istio stores every twin up front; working them out here halves the
   * table's memory, with the same answers (a real name wins over a twin).
   */
  get(name: string): LookupEntry | undefined {
    const slot = this.#find(name);
    if (slot !== undefined) return typeof slot === 'number' ? addressesOf(this.#read(slot)[1].ips) : slot.entry;
    const base = this.#twinOf(name);
    return base === undefined ? undefined : { cname: base };
  }

  has(name: string): boolean {
    return this.#find(name) !== undefined || this.#twinOf(name) !== undefined;
  }

  /** The known name whose twin under the first search domain `name` is. */
  #twinOf(name: string): string | undefined {
    const search = this.#domain.firstSearch;
    if (!search || name.length <= search.length || !name.endsWith(search)) return undefined;
    const base = name.slice(0, -search.length);
    return base.endsWith('.') && !base.endsWith(search) && this.#find(base) !== undefined ? base : undefined;
  }

  /**
   * Adds one NameTable entry; false when it has no usable address (Istio
   * skips those too). `at`: where the entry starts in the table's bytes
   * (given to the constructor); the names then keep only that number. A
   * name an earlier entry gave is answered from this one now.
   */
  add(host: string, info: NameInfo, at?: number): boolean {
    const entry = addressesOf(info.ips);
    if (!entry.v4 && !entry.v6) return false;
    const names = this.#altHosts(host, info);
    const slot: Slot = at ?? { names, entry };
    for (const name of names) this.#put(name, slot);
    return true;
  }

  #put(name: string, slot: Slot): void {
    const key = this.#hash(name);
    const found = this.#slots.get(key);
    if (found === undefined) {
      this.#slots.set(key, slot);
      this.#size++;
    } else if (found instanceof Map) {
      if (!found.has(name)) this.#size++;
      found.set(name, slot);
    } else {
      this.#slots.set(key, this.#chained(Array.isArray(found) ? found : [found], name, slot));
    }
  }

  /** Another name with the same hash (rare: a chain), or this name again (replaced); a chain past maxChain turns into a map. */
  #chained(chain: Slot[], name: string, slot: Slot): Bucket {
    const same = chain.findIndex((candidate) => this.#holds(candidate, name));
    if (same >= 0) chain[same] = slot;
    else {
      chain.push(slot);
      this.#size++;
    }
    if (chain.length === 1) return chain[0]!;
    if (chain.length <= maxChain) return chain;
    const byName = new Map<string, Slot>();
    const key = this.#hash(name);
    for (const candidate of chain) for (const each of this.#namesOf(candidate)) if (this.#hash(each) === key) byName.set(each, candidate);
    return byName;
  }

  #find(name: string): Slot | undefined {
    const found = this.#slots.get(this.#hash(name));
    if (found === undefined) return undefined;
    if (found instanceof Map) return found.get(name);
    if (!Array.isArray(found)) return this.#holds(found, name) ? found : undefined;
    return found.find((candidate) => this.#holds(candidate, name));
  }

  #holds(slot: Slot, name: string): boolean {
    this.#probes++;
    return this.#namesOf(slot).has(name);
  }

  /** The entry last read from the bytes: a query asks has() and get() of one name, a twin's base too. */
  #last: { at: number; read: [host: string, info: NameInfo]; names: Set<string> } | undefined;

  #readAt(at: number): { read: [host: string, info: NameInfo]; names: Set<string> } {
    if (this.#last?.at !== at) {
      const read = readNameEntry(entryAt(this.#source!, at));
      this.#last = { at, read, names: this.#altHosts(...read) };
    }
    return this.#last;
  }

  #read(at: number): [host: string, info: NameInfo] {
    return this.#readAt(at).read;
  }

  #namesOf(slot: Slot): Set<string> {
    return typeof slot === 'number' ? this.#readAt(slot).names : slot.names;
  }

  #altHosts(host: string, info: NameInfo): Set<string> {
    const lower = host.toLowerCase();
    if (info.registry !== 'Kubernetes') return new Set([lower.endsWith('.') ? lower : `${lower}.`]);
    // Istio gives a Kubernetes name that already ends in a dot no names at all.
    if (lower.endsWith('.')) return new Set();
    const out = new Set([`${lower}.`]);
    const { namespace, domain, parts } = this.#domain;
    // Short forms only for the pod's own cluster domain: across domains name.ns would clash.
    if (!domain || !lower.endsWith(domain)) return out;
    const short = `${info.shortname}.${info.namespace}`.toLowerCase();
    out.add(`${short}.`);
    if (info.namespace === namespace) out.add(`${info.shortname.toLowerCase()}.`);
    out.add(`${short}.${parts[0]}.`);
    for (const alt of info.altHosts) out.add(`${alt.toLowerCase()}.`);
    return out;
  }
}

/** A name's addresses by family; unparsable ones left out. */
function addressesOf(ips: readonly string[]): LookupEntry {
  const v4: string[] = [];
  const v6: string[] = [];
  for (const ip of ips) {
    const family = isIP(ip);
    if (family === 4) v4.push(ip);
    else if (family === 6) v6.push(ip);
  }
  const entry: LookupEntry = {};
  if (v4.length > 0) entry.v4 = v4;
  if (v6.length > 0) entry.v6 = v6;
  return entry;
}

/**
 * FNV-1a over the UTF-16 code units from a seeded start, cut to 30 bits so
 * that it stays a small integer (no heap number): the names are kept as
 * numbers, not strings, which kept the GC's pauses short at 200,000 names.
 * The top 30 bits: the low bits of a multiply see only the low bits.
 */
function hashOf(name: string, seed: number): number {
  let hash = 0x811c9dc5 ^ seed;
  for (let at = 0; at < name.length; at++) hash = Math.imul(hash ^ name.charCodeAt(at), 0x01000193);
  return hash >>> 2;
}

/** Maps a table is split into; 400,000 names make ~6,000 a map. */
const shardCount = 64;

/**
 * A Map split by its (hashed) keys. One Map grows by copying all of itself
 * in one step, which for a large table holds the loop however the build
 * around it is sliced (docs/benchmarks.md); each of these grows a 64th as much.
 */
class ShardedMap<V> {
  readonly #shards = Array.from({ length: shardCount }, () => new Map<number, V>());

  get(key: number): V | undefined {
    return this.#shards[key % shardCount]!.get(key);
  }

  set(key: number, value: V): void {
    this.#shards[key % shardCount]!.set(key, value);
  }
}
