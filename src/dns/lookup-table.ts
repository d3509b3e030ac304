import { isIPv4, isIPv6 } from 'node:net';
import type { NameInfo } from './name-table-wire.ts';

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

/**
 * The names the agent answers, built the way Istio's agent builds them
 * (`pkg/dns/client/dns.go`): a Kubernetes service also answers as `name.ns`,
 * `name.ns.svc` and, in the pod's own namespace, `name`; every name has a
 * CNAME twin under the first search domain, so a resolver walking the search
 * list gets to the real name in one step. Keys are lower case, ending in a dot.
 */
export class LookupTable {
  readonly #names = new Map<string, LookupEntry>();
  readonly #domain: { namespace: string; domain: string; parts: string[]; firstSearch: string | undefined };

  constructor(pod: PodDomain) {
    const parts = pod.domain.split('.').filter(Boolean);
    if (parts[0] === pod.namespace) parts.shift();
    const first = pod.search[0];
    this.#domain = { namespace: pod.namespace, domain: parts.join('.'), parts, firstSearch: first && (first.endsWith('.') ? first : `${first}.`).toLowerCase() };
  }

  get size(): number {
    return this.#names.size;
  }

  get(name: string): LookupEntry | undefined {
    return this.#names.get(name);
  }

  has(name: string): boolean {
    return this.#names.has(name);
  }

  /** Adds one NameTable entry; false when it has no usable address (Istio skips those too). */
  add(host: string, info: NameInfo): boolean {
    const v4 = info.ips.filter((ip) => isIPv4(ip));
    const v6 = info.ips.filter((ip) => isIPv6(ip));
    if (v4.length === 0 && v6.length === 0) return false;
    const alts = this.#altHosts(host, info);
    const entry: LookupEntry = {};
    if (v4.length > 0) entry.v4 = v4;
    if (v6.length > 0) entry.v6 = v6;
    for (const alt of alts) {
      this.#names.set(alt, entry);
      this.#addSearchTwin(alt, alts);
    }
    return true;
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

  #addSearchTwin(name: string, alts: Set<string>): void {
    const search = this.#domain.firstSearch;
    if (!search || name.endsWith(search)) return;
    const twin = name + search;
    // A real name wins over another name's twin, whichever came first.
    if (alts.has(twin) || this.#names.get(twin)?.cname === undefined && this.#names.has(twin)) return;
    this.#names.set(twin, { cname: name });
  }
}
