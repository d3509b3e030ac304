import { watch, type FSWatcher } from 'chokidar';
import type { ChangeSource } from './change-source.ts';

/**
 * Watches directories, not files: a Kubernetes secret volume swaps a `..data`
 * symlink, and a cert dir may not exist yet. Any event is only a hint; the
 * watch re-reads and hashes every file, so noise costs one read.
 */
export class ChokidarSource implements ChangeSource {
  readonly #dirs: readonly string[];
  #watcher: FSWatcher | undefined;

  constructor(dirs: readonly string[]) {
    this.#dirs = [...new Set(dirs)];
  }

  start(onChange: (path: string) => void): Promise<void> {
    const watcher = watch([...this.#dirs], { ignoreInitial: true, followSymlinks: false, depth: 0 });
    this.#watcher = watcher;
    watcher.on('all', (_event, path) => onChange(path));
    // An unreadable dir shows up here; the re-read then names the file at fault.
    watcher.on('error', () => onChange(this.#dirs[0]!));
    return new Promise((resolve) => watcher.once('ready', resolve));
  }

  async close(): Promise<void> {
    await this.#watcher?.close();
  }
}
