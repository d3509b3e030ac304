import { closeSync, constants, openSync } from 'node:fs';
import { Socket } from 'node:net';
import { join } from 'node:path';
import { execa } from 'execa';

/** A FIFO a child writes to (`writeFd`) and the test reads (`reader`). */
export interface FifoEnd {
  writeFd: number;
  reader: Socket;
  /** Closes the test's copy of the write end once the child has its own: the reader then ends with the child. */
  release(): void;
}

/**
 * A process's stdout or stderr as a container runtime gives it: a FIFO
 * (containerd's, CRI-O's conmon pipes), which a child can open again by
 * path (/dev/stdout), unlike the socket a Node parent pipes through.
 */
export async function openFifo(dir: string, name: string): Promise<FifoEnd> {
  const path = join(dir, name);
  await execa('mkfifo', ['-m', '0600', path]);
  const readFd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  const writeFd = openSync(path, constants.O_WRONLY);
  let released = false;
  return {
    writeFd,
    reader: new Socket({ fd: readFd, readable: true, writable: false }),
    release: () => {
      if (!released) closeSync(writeFd);
      released = true;
    },
  };
}
