import type { Readable } from 'node:stream';

/**
 * Collects a child's stdout and stderr as text, each and their interleaving
 * capped at `maxBytes`: past it the rest is read and dropped, so a chatty
 * child never blocks on a full pipe nor grows the agent's memory.
 */
export class OutputCapture {
  readonly #maxBytes: number;
  readonly #parts = { stdout: [] as Buffer[], stderr: [] as Buffer[], all: [] as Buffer[] };
  readonly #sizes = { stdout: 0, stderr: 0, all: 0 };

  constructor(maxBytes: number) {
    this.#maxBytes = maxBytes;
  }

  /** Starts reading `stream` as `name`. */
  read(stream: Readable | null, name: 'stdout' | 'stderr'): void {
    stream?.on('data', (chunk: Buffer) => {
      this.#keep(name, chunk);
      this.#keep('all', chunk);
    });
  }

  #keep(name: 'stdout' | 'stderr' | 'all', chunk: Buffer): void {
    const room = this.#maxBytes - this.#sizes[name];
    if (room <= 0) return;
    const kept = chunk.length > room ? chunk.subarray(0, room) : chunk;
    this.#parts[name].push(kept);
    this.#sizes[name] += kept.length;
  }

  text(): { stdout: string; stderr: string; all: string } {
    const join = (name: 'stdout' | 'stderr' | 'all') => Buffer.concat(this.#parts[name]).toString('utf8');
    return { stdout: join('stdout'), stderr: join('stderr'), all: join('all') };
  }
}
