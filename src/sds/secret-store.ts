import { createHash } from 'node:crypto';

/** What a secret is made of: a workload identity, or the roots to check a peer with. */
export type SecretMaterial =
  | { kind: 'tls-certificate'; chain: Buffer; key: Buffer }
  | { kind: 'validation-context'; trustedCa: Buffer };

/**
 * One servable secret: PEM bytes that passed the consistency check, with the
 * first certificate's serial and expiry. Producers (the certificate files
 * today, a CA client later) hand the store exactly this.
 */
export interface StoredSecret {
  material: SecretMaterial;
  /** Serial of the first certificate, hex upper-case (as openssl prints it). */
  serial: string;
  /** Expiry of the first certificate, ms since the epoch. */
  expiresAt: number;
  /** Files the bytes came from, so the agent knows which files SDS delivers; empty for a CA. */
  files: readonly string[];
}

/** A stored secret with the hash that tells a real change from a re-read of the same bytes. */
export interface StoreEntry extends StoredSecret {
  hash: string;
}

/**
 * The secrets the SDS server may serve, by resource name, and why a name
 * cannot be served yet. Listeners hear each name whose bytes changed.
 */
export class SecretStore {
  readonly #entries = new Map<string, StoreEntry>();
  readonly #problems = new Map<string, string>();
  readonly #listeners = new Set<(name: string) => void>();

  /** Stores `secret` as `name`; tells listeners only when the bytes differ. */
  put(name: string, secret: StoredSecret): void {
    this.#problems.delete(name);
    const hash = hashMaterial(secret.material);
    if (this.#entries.get(name)?.hash === hash) return;
    this.#entries.set(name, { ...secret, hash });
    for (const listener of this.#listeners) listener(name);
  }

  /** Says why `name` cannot be served (kept beside the last good secret, if any). */
  setProblem(name: string, reason: string): void {
    this.#problems.set(name, reason);
  }

  /** Forgets `name`: streams keep what they were sent and wait for a new one. */
  remove(name: string, reason: string): void {
    this.#entries.delete(name);
    this.#problems.set(name, reason);
  }

  /** Drops `name` and its problem: nobody holds it any more (a file-backed name let go). */
  forget(name: string): void {
    this.#entries.delete(name);
    this.#problems.delete(name);
  }

  get(name: string): StoreEntry | undefined {
    return this.#entries.get(name);
  }

  problem(name: string): string | undefined {
    return this.#problems.get(name);
  }

  entries(): IterableIterator<[string, StoreEntry]> {
    return this.#entries.entries();
  }

  onChange(listener: (name: string) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }
}

function hashMaterial(material: SecretMaterial): string {
  const hash = createHash('sha256').update(material.kind);
  if (material.kind === 'tls-certificate') hash.update(material.chain).update('\0').update(material.key);
  else hash.update(material.trustedCa);
  return hash.digest('hex');
}
