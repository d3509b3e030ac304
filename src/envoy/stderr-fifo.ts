import { close, constants, open, rm } from 'node:fs';
import { Socket } from 'node:net';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';
import { execa } from 'execa';
import type { Logger } from '../shared/log.ts';

const openFd = promisify(open);
const closeFd = promisify(close);
const remove = promisify(rm);

/** One epoch's stderr: the end Envoy writes to, and the lines the agent reads. */
export interface StderrFifo {
  /** Handed to Envoy as its fd 2; `release` closes the agent's copy once Envoy has it. */
  readonly writeFd: number;
  readonly lines: AsyncIterable<string>;
  /** Closes the agent's write end: the lines then end when Envoy's do. */
  release(): void;
  /** Closes both ends: after the lines ended, or for an epoch never spawned. */
  close(): void;
}

/**
 * Envoy's stderr as a FIFO the agent reads. Envoy opens an access log's
 * `/dev/stderr` by path, and a socket (what Node pipes a child's stdio
 * through) cannot be opened by path: ENXIO, the listener is refused. A FIFO
 * can, as the container runtime's stdio can. Node makes no pipe of its own:
 * `mkfifo` makes a named one, unlinked once both ends are open. Where
 * `mkfifo` cannot run, Envoy's stderr stays a socket, said once.
 */
export class StderrFifos {
  readonly #dir: string;
  readonly #logger: Logger;
  #unavailable = false;

  constructor(dir: string, logger: Logger) {
    this.#dir = dir;
    this.#logger = logger;
  }

  /** A FIFO for this epoch, or undefined (Envoy's stderr is then piped as any child's). */
  async open(epoch: number): Promise<StderrFifo | undefined> {
    if (this.#unavailable) return undefined;
    const path = join(this.#dir, `.envoy-stderr-${process.pid}-${epoch}`);
    try {
      await remove(path, { force: true });
      await execa('mkfifo', ['-m', '0600', path], { stdin: 'ignore' });
      return await openEnds(path);
    } catch (error) {
      this.#unavailable = true;
      this.#logger.warn({ err: error }, "no FIFO for Envoy's stderr: it is a socket, so an access log to /dev/stderr cannot open");
      return undefined;
    } finally {
      // Unlinked once both ends are open; when the FIFO was never made, there is nothing to unlink.
      await remove(path).catch(() => undefined);
    }
  }
}

async function openEnds(path: string): Promise<StderrFifo> {
  // The read end first, without blocking; the write end then finds a reader
  // and opens at once, blocking for Envoy's writes (no EAGAIN, no lost line).
  const readFd = await openFd(path, constants.O_RDONLY | constants.O_NONBLOCK);
  let writeFd: number;
  try {
    writeFd = await openFd(path, constants.O_WRONLY);
  } catch (error) {
    await closeFd(readFd);
    throw error;
  }
  const reader = new Socket({ fd: readFd, readable: true, writable: false });
  let released = false;
  const release = () => {
    if (!released) close(writeFd, () => undefined);
    released = true;
  };
  return {
    writeFd,
    lines: createInterface({ input: reader, crlfDelay: Infinity }),
    release,
    close: () => (release(), reader.destroy()),
  };
}
