import { readBoundedFile, readFailure } from '../shared/bounded-file.ts';
import { lastKnownGoodMaxAgeMs, ownedByAgent } from '../shared/last-known-good.ts';
import { writeAtomically } from '../shared/synced-file.ts';

export interface LastKnownGoodTableOptions {
  path: string;
  /** The node id the table belongs to: a file another proxy left is not used. */
  node: string;
  now: () => number;
  /** The largest file read (default 64 MiB, as the kept xDS config: base64 of ~48 MiB of table). */
  maxBytes?: number;
  /** Lets the event loop turn between two slices of the table's base64 (default setImmediate; tests pass a fake). */
  yieldToLoop?: () => Promise<void>;
}

const setImmediateTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

const defaultMaxBytes = 64 * 1024 * 1024;

/** A last-known-good table, or why the file is not used. */
export type LastKnownGoodRead = { ok: true; version: string; table: Buffer } | { ok: false; reason: string };

/**
 * The last name table the agent accepted, on disk beside the last-known-good xDS config
 * (`<configPath>/dns-name-table.json`, 0600), so a restarted agent answers
 * names while the discovery server is down. Same rules as the last-known-good xDS
 * config: this node's only, and no older than a day. Written after each
 * accepted table, one write at a time, the newest last.
 */
export class LastKnownGoodTable {
  readonly #options: LastKnownGoodTableOptions;
  #writing: Promise<void> = Promise.resolve();

  constructor(options: LastKnownGoodTableOptions) {
    this.#options = options;
  }

  get path(): string {
    return this.#options.path;
  }

  /**
   * The kept table, read as the kept xDS config is: bounded, not through a
   * symlink, only a regular file this uid owns (a FIFO, a device, a link
   * to another file are refused, never read). No reason quotes the file.
   */
  async read(): Promise<LastKnownGoodRead> {
    let text: string;
    try {
      text = (await readBoundedFile(this.#options.path, { maxBytes: this.#options.maxBytes ?? defaultMaxBytes, noFollow: true, check: ownedByAgent })).toString(
        'utf8',
      );
    } catch (error) {
      return { ok: false, reason: (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'none kept' : `unreadable: ${readFailure(error)}` };
    }
    let parsed: { node?: unknown; at?: unknown; version?: unknown; table?: unknown };
    try {
      parsed = JSON.parse(text) as typeof parsed;
    } catch {
      return { ok: false, reason: 'not JSON' };
    }
    const fields = typeof parsed === 'object' && parsed !== null;
    if (!fields || typeof parsed.version !== 'string' || typeof parsed.table !== 'string' || typeof parsed.at !== 'number')
      return { ok: false, reason: 'not a kept name table' };
    if (parsed.node !== this.#options.node) return { ok: false, reason: 'kept for another node, not this one' };
    const age = this.#options.now() - parsed.at;
    if (age > lastKnownGoodMaxAgeMs)
      return { ok: false, reason: `written ${Math.round(age / 60_000)} minutes ago, more than the ${lastKnownGoodMaxAgeMs / 60_000} allowed` };
    return { ok: true, version: parsed.version, table: Buffer.from(parsed.table, 'base64') };
  }

  /** Queues a write; rejects with the write's error (the caller logs it). */
  write(version: string, table: Buffer): Promise<void> {
    const head = () => ({ node: this.#options.node, at: this.#options.now(), version });
    const text = () => lastKnownGoodText(head(), table, this.#options.yieldToLoop ?? setImmediateTurn);
    const next = this.#writing.then(async () => writeAtomically(this.#options.path, await text()));
    this.#writing = next.catch(() => undefined);
    return next;
  }

  /** Waits for the queued writes. */
  async close(): Promise<void> {
    await this.#writing;
  }
}

/** Table bytes turned to base64 between two event-loop turns: a multiple of 3, so the pieces join into one base64 string. */
const base64SliceBytes = 3 * 64 * 1024;

/**
 * The file's JSON, the table's base64 made a slice at a time with the loop
 * turning between slices: for 100,000 names one JSON.stringify held it
 * longer than any step of the table's build. base64 needs no JSON
 * escaping, so the text is put together around it.
 */
async function lastKnownGoodText(head: { node: string; at: number; version: string }, table: Buffer, yieldToLoop: () => Promise<void>): Promise<Buffer> {
  const json = JSON.stringify({ ...head, table: '' });
  const parts = [Buffer.from(json.slice(0, -2))];
  for (let start = 0; start < table.length; start += base64SliceBytes) {
    if (start > 0) await yieldToLoop();
    parts.push(Buffer.from(table.subarray(start, start + base64SliceBytes).toString('base64'), 'latin1'));
  }
  parts.push(Buffer.from(json.slice(-2)));
  return Buffer.concat(parts);
}
