import { readFile } from 'node:fs/promises';
import { writeAtomically } from '../xds/kept-file.ts';

/**
 * The last name table the agent accepted, on disk beside the kept xDS config
 * (`<configPath>/dns-name-table.json`, 0600), so a restarted agent answers
 * names while the discovery server is down. Written after each accepted
 * table, one write at a time, the newest last.
 */
export class KeptTable {
  readonly #path: string;
  #writing: Promise<void> = Promise.resolve();

  constructor(path: string) {
    this.#path = path;
  }

  get path(): string {
    return this.#path;
  }

  /** The kept table, or undefined when there is none or it is not readable as one. */
  async read(): Promise<{ version: string; table: Buffer } | undefined> {
    try {
      const parsed = JSON.parse(await readFile(this.#path, 'utf8')) as { version?: unknown; table?: unknown };
      if (typeof parsed.version !== 'string' || typeof parsed.table !== 'string') return undefined;
      return { version: parsed.version, table: Buffer.from(parsed.table, 'base64') };
    } catch {
      return undefined;
    }
  }

  /** Queues a write; rejects with the write's error (the caller logs it). */
  write(version: string, table: Buffer): Promise<void> {
    const next = this.#writing.then(() => writeAtomically(this.#path, JSON.stringify({ version, table: table.toString('base64') })));
    this.#writing = next.catch(() => undefined);
    return next;
  }

  /** Waits for the queued writes. */
  async close(): Promise<void> {
    await this.#writing;
  }
}
