import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { FileRefused, readBoundedFile } from '../../shared/bounded-file.ts';
import type { Clock, Timer } from '../../shared/clock.ts';
import type { Logger } from '../../shared/log.ts';
import { lastKnownGoodMaxAgeMs, ownedByAgent } from '../../shared/last-known-good.ts';
import { writeAtomically } from '../../shared/synced-file.ts';
import { decodeLastKnownGood, encodeLastKnownGood } from './codec.ts';
import { LastKnownGoodConfig } from './config.ts';

export interface LastKnownGoodFileOptions {
  /** --configPath: the file is `<configPath>/last-known-good.json`. */
  configPath: string;
  /** The node id the last-known-good config belongs to; a file for another one is ignored. */
  node: string;
  clock: Clock;
  logger: Logger;
  /** Largest file written or read (default lastKnownGoodFileMaxBytes). */
  maxBytes?: number;
}

/** 64 MiB: several times a 3000-service mesh's config; past it the file is not written (nor kept). */
export const lastKnownGoodFileMaxBytes = 64 * 1024 * 1024;
/** A write waits this long after a change, so a burst of pushes costs one write. */
const writeDelayMs = 1_000;
/**
 * And comes at most this often: endpoint churn in a large mesh ACKs every
 * second or so, and rewriting megabytes that often buys nothing; a restored
 * config only has to carry Envoy until the discovery server answers.
 */
const writeIntervalMs = 10_000;

export const lastKnownGoodFileName = 'last-known-good.json';

/**
 * Keeps the last-known-good config on disk across agent restarts: written (0600, to a
 * temporary file renamed over the old one) a second after a change, at most
 * every 10 s; read once at start.
 */
export class LastKnownGoodFile {
  readonly #options: LastKnownGoodFileOptions;
  readonly path: string;
  #timer: Timer | undefined;
  #lastWriteAt = -Infinity;
  #writing: Promise<void> = Promise.resolve();
  #lastKnownGood: LastKnownGoodConfig | undefined;

  constructor(options: LastKnownGoodFileOptions) {
    this.#options = options;
    this.path = join(options.configPath, lastKnownGoodFileName);
  }

  /** Restores what the file holds into `lastKnownGood`, when it is there and trustworthy; one log line otherwise. */
  async load(lastKnownGood: LastKnownGoodConfig): Promise<void> {
    const { logger, clock, node } = this.#options;
    const text = await this.#read();
    if (text === undefined) return;
    const decoded = decodeLastKnownGood(text, { node, now: clock.now(), maxAgeMs: lastKnownGoodMaxAgeMs });
    if (!decoded.ok) return void logger.warn({ file: this.path, reason: decoded.reason }, 'ignoring the kept last-known-good config file');
    for (const { mode, entry } of decoded.types) lastKnownGood.restore(mode, entry);
    logger.info({ file: this.path, types: decoded.types.length, writtenAt: new Date(decoded.writtenAt).toISOString() }, 'restored the last-known-good config');
  }

  /**
   * The file as this agent wrote it, or nothing: not through a symlink, not
   * a FIFO or device, owned by us and writable by no one else, within the
   * cap. Whatever it is otherwise, the line says why, never what it holds.
   */
  async #read(): Promise<string | undefined> {
    try {
      return (await readBoundedFile(this.path, { maxBytes: this.#maxBytes, noFollow: true, check: ownedByAgent })).toString('utf8');
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') return undefined;
      const reason = error instanceof FileRefused ? error.message : code === 'ELOOP' ? 'is a symlink' : `cannot be read (${code ?? 'error'})`;
      this.#options.logger.warn({ file: this.path, reason }, 'ignoring the kept last-known-good config file');
      return undefined;
    }
  }

  /** Writes the file after every change of `lastKnownGood`, debounced. */
  follow(lastKnownGood: LastKnownGoodConfig): void {
    this.#lastKnownGood = lastKnownGood;
    lastKnownGood.onChange(() => {
      if (this.#timer) return; // the write already scheduled takes the state as it is then
      const now = this.#options.clock.now();
      const due = Math.max(now + writeDelayMs, this.#lastWriteAt + writeIntervalMs);
      this.#timer = this.#options.clock.setTimeout(() => void this.flush(), due - now);
    });
  }

  /** Writes now (waits for a write in progress first). */
  flush(): Promise<void> {
    this.#timer?.cancel();
    this.#timer = undefined;
    this.#lastWriteAt = this.#options.clock.now();
    const lastKnownGood = this.#lastKnownGood;
    if (!lastKnownGood) return this.#writing;
    this.#writing = this.#writing.then(() => this.#write(lastKnownGood));
    return this.#writing;
  }

  async #write(lastKnownGood: LastKnownGoodConfig): Promise<void> {
    const { logger, clock, node } = this.#options;
    const text = encodeLastKnownGood(lastKnownGood, node, clock.now());
    try {
      if (Buffer.byteLength(text) > this.#maxBytes) {
        await rm(this.path, { force: true }); // an older, smaller one would be a config Envoy has moved on from
        return void logger.warn(
          { file: this.path, bytes: Buffer.byteLength(text), limit: this.#maxBytes },
          'kept config too large to write; an agent restart will not have it',
        );
      }
      await writeAtomically(this.path, text);
    } catch (error) {
      logger.warn({ file: this.path, err: error }, 'cannot write the kept last-known-good config');
    }
  }

  /** Resolves once the write in flight, if any, is done (without forcing one). */
  idle(): Promise<void> {
    return this.#writing;
  }

  get #maxBytes(): number {
    return this.#options.maxBytes ?? lastKnownGoodFileMaxBytes;
  }

  /** Writes a change still waiting for its delay; then nothing more is written. */
  async close(): Promise<void> {
    if (this.#timer) await this.flush();
    else await this.#writing;
    this.#lastKnownGood = undefined;
  }
}

/** The last-known-good config as the last agent left it (when trustworthy), written on from now on. */
export async function loadLastKnownGoodConfig(
  options: LastKnownGoodFileOptions,
): Promise<{ lastKnownGood: LastKnownGoodConfig; lastKnownGoodFile: LastKnownGoodFile }> {
  const lastKnownGood = new LastKnownGoodConfig();
  const lastKnownGoodFile = new LastKnownGoodFile(options);
  await lastKnownGoodFile.load(lastKnownGood);
  lastKnownGoodFile.follow(lastKnownGood);
  return { lastKnownGood, lastKnownGoodFile };
}
