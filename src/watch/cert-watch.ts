import type { Clock, Timer } from '../shared/clock.ts';
import type { Logger } from '../shared/log.ts';
import type { ChangeSource } from './change-source.ts';
import { groupPaths, type CertGroup } from './cert-files.ts';
import { checkCertFiles, hashCertFiles, readCertFiles, shortHash, type CertProblem, type FileRead } from './cert-set.ts';

/** What made the watch read the files. */
type Trigger = 'start' | 'event' | 'resync';

export interface CertWatchOptions {
  groups: readonly CertGroup[];
  source: ChangeSource;
  clock: Clock;
  logger: Logger;
  /** Quiet time after the last event before the files are read. */
  debounceMs: number;
  /** Reads the files this often without an event too (0: never): watchers can miss events. */
  resyncMs?: number;
  /**
   * Called with the hash of every new consistent set, the first one included,
   * and the files as read: the bytes the check accepted, for whoever serves them.
   */
  onConfig: (hash: string, files: readonly FileRead[]) => void;
  /** Called when a set is not consistent (once per content), naming the file. */
  onProblem?: (problem: CertProblem) => void;
  read?: (paths: readonly string[]) => Promise<FileRead[]>;
}

/**
 * Turns file events into desired configs: debounce a burst, read every file
 * once, and report the content hash only when the set is consistent (each
 * file parses, each key matches its certificate). An inconsistent set is
 * logged, naming the file, and ignored: the running Envoy keeps serving, and
 * the next event (the writer finishing) is checked again.
 *
 * Events are only hints, and hints get lost: a watcher that compares
 * directory listings by name misses a name that went file, dir, file again,
 * and inotify drops events when its queue overflows. A periodic re-read makes
 * a missed event cost a delay instead of a certificate that never rotates.
 */
export class CertWatch {
  readonly #options: CertWatchOptions;
  readonly #paths: string[];
  #debounceTimer: Timer | undefined;
  #resyncTimer: Timer | undefined;
  #checking: Promise<void> = Promise.resolve();
  #lastHash: string | undefined;
  #lastProblem: string | undefined;
  #closed = false;

  constructor(options: CertWatchOptions) {
    this.#options = options;
    this.#paths = groupPaths(options.groups);
  }

  /** Starts watching and checks the files once right away. */
  async start(): Promise<void> {
    await this.#options.source.start(() => this.#onEvent());
    this.#queueCheck('start');
    this.#scheduleResync();
    await this.#checking;
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#debounceTimer?.cancel();
    this.#resyncTimer?.cancel();
    await this.#options.source.close();
    await this.#checking;
  }

  /** Resolves once no check is running (tests). */
  settled(): Promise<void> {
    return this.#checking;
  }

  #onEvent(): void {
    if (this.#closed) return;
    this.#debounceTimer?.cancel();
    this.#debounceTimer = this.#options.clock.setTimeout(() => this.#queueCheck('event'), this.#options.debounceMs);
  }

  #scheduleResync(): void {
    const every = this.#options.resyncMs ?? 0;
    if (every <= 0 || this.#closed) return;
    this.#resyncTimer = this.#options.clock.setTimeout(() => {
      // A pending debounce reads the files soon anyway.
      if (!this.#debounceTimer) this.#queueCheck('resync');
      this.#scheduleResync();
    }, every);
  }

  /** Checks run one at a time, so hashes are reported in the order files were read. */
  #queueCheck(trigger: Trigger): void {
    if (trigger === 'event') this.#debounceTimer = undefined;
    this.#checking = this.#checking.then(() => this.#check(trigger));
  }

  async #check(trigger: Trigger): Promise<void> {
    if (this.#closed) return;
    const files = await (this.#options.read ?? readCertFiles)(this.#paths);
    const hash = hashCertFiles(files);
    const problem = checkCertFiles(this.#options.groups, files);
    if (problem) return this.#report(problem, hash);
    this.#lastProblem = undefined;
    if (hash === this.#lastHash || this.#closed) return;
    this.#lastHash = hash;
    const present = files.filter((file) => file.content).map((file) => file.path);
    const fields = { config: shortHash(hash), files: present, ...(trigger === 'resync' ? { foundBy: 'periodic re-read; a file event was missed' } : {}) };
    this.#options.logger.info(fields, present.length ? 'certificate files changed' : 'no certificate files; running without certificates');
    this.#options.onConfig(hash, files);
  }

  /** Says a problem once per content: a writer in progress fires several events, and resyncs repeat. */
  #report(problem: CertProblem, hash: string): void {
    const key = `${hash}\0${problem.file}: ${problem.reason}`;
    if (key === this.#lastProblem) return;
    this.#lastProblem = key;
    this.#options.onProblem?.(problem);
    this.#options.logger.warn(
      { file: problem.file, reason: problem.reason },
      'certificate files are not a consistent set; keeping the running config until they are',
    );
  }
}
