import type { Clock, Timer } from '../shared/clock.ts';
import type { Logger } from '../shared/log.ts';
import type { ChangeSource } from './change-source.ts';
import { groupPaths, type CertGroup } from './cert-files.ts';
import { checkCertFiles, hashCertFiles, readCertFiles, type CertProblem, type FileRead } from './cert-set.ts';

export interface CertWatchOptions {
  groups: readonly CertGroup[];
  source: ChangeSource;
  clock: Clock;
  logger: Logger;
  /** Quiet time after the last event before the files are read. */
  debounceMs: number;
  /** Called with the hash of every new consistent set, the first one included. */
  onConfig: (hash: string) => void;
  read?: (paths: readonly string[]) => Promise<FileRead[]>;
}

/**
 * Turns file events into desired configs: debounce a burst, read every file
 * once, and report the content hash only when the set is consistent (each
 * file parses, each key matches its certificate). An inconsistent set is
 * logged, naming the file, and ignored: the running Envoy keeps serving, and
 * the next event (the writer finishing) is checked again.
 */
export class CertWatch {
  readonly #options: CertWatchOptions;
  readonly #paths: string[];
  #timer: Timer | undefined;
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
    this.#queueCheck();
    await this.#checking;
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#timer?.cancel();
    await this.#options.source.close();
    await this.#checking;
  }

  /** Resolves once no check is running (tests). */
  settled(): Promise<void> {
    return this.#checking;
  }

  #onEvent(): void {
    if (this.#closed) return;
    this.#timer?.cancel();
    this.#timer = this.#options.clock.setTimeout(() => this.#queueCheck(), this.#options.debounceMs);
  }

  /** Checks run one at a time, so hashes are reported in the order files were read. */
  #queueCheck(): void {
    this.#timer = undefined;
    this.#checking = this.#checking.then(() => this.#check());
  }

  async #check(): Promise<void> {
    if (this.#closed) return;
    const files = await (this.#options.read ?? readCertFiles)(this.#paths);
    const problem = checkCertFiles(this.#options.groups, files);
    if (problem) return this.#report(problem);
    this.#lastProblem = undefined;
    const hash = hashCertFiles(files);
    if (hash === this.#lastHash || this.#closed) return;
    this.#lastHash = hash;
    const present = files.filter((file) => file.content).map((file) => file.path);
    this.#options.logger.info({ config: hash.slice(0, 12), files: present }, present.length ? 'certificate files changed' : 'no certificate files; running without certificates');
    this.#options.onConfig(hash);
  }

  #report(problem: CertProblem): void {
    const text = `${problem.file}: ${problem.reason}`;
    // A writer in progress fires several events; say it once per problem.
    if (text === this.#lastProblem) return;
    this.#lastProblem = text;
    this.#options.logger.warn({ file: problem.file, reason: problem.reason }, 'certificate files are not a consistent set; keeping the running config until they are');
  }
}
