import { closeSync, constants, fstatSync, openSync, readSync, type Stats } from 'node:fs';
import { open } from 'node:fs/promises';

/** A file refused for what it is (kind, size, owner, mode), never for what it says: the reason holds no content. */
export class FileRefused extends Error {
  override name = 'FileRefused';
}

/** Why a read failed, for an error line: the refusal, or the errno code. */
export function readFailure(error: unknown): string {
  if (error instanceof FileRefused) return error.message;
  return (error as NodeJS.ErrnoException).code ?? String(error);
}

export interface BoundedReadOptions {
  /** More than this many bytes is refused, also when the file grows while read. */
  maxBytes: number;
  /** A symlink at the path itself is refused (O_NOFOLLOW) instead of followed. */
  noFollow?: boolean;
  /** Further checks on what was opened (owner, mode); a string refuses it. */
  check?: (info: Stats) => string | undefined;
}

/**
 * Reads a file an operator or an earlier run left, without trusting it:
 * opened non-blocking (a FIFO at the path would otherwise hang the open),
 * only a regular file is read (not a FIFO, socket or device, which can
 * stream without end), and never more than `maxBytes`. The checks are on
 * the descriptor that is read, so a swap between check and read cannot
 * slip another file in. Errors of the open itself (ENOENT, ELOOP for a
 * refused symlink, EACCES) come back as thrown; refusals as FileRefused.
 */
export async function readBoundedFile(path: string, options: BoundedReadOptions): Promise<Buffer> {
  const handle = await open(path, openFlags(options));
  try {
    const buffer = bufferFor(await handle.stat(), options);
    let filled = 0;
    for (;;) {
      const { bytesRead } = await handle.read(buffer, filled, buffer.length - filled, null);
      if (bytesRead === 0) break;
      filled += bytesRead;
      if (filled === buffer.length) break;
    }
    return filledPart(buffer, filled);
  } finally {
    await handle.close();
  }
}

/** readBoundedFile for callers that must stay synchronous: the same checks, and it cannot block on a FIFO either. */
export function readBoundedFileSync(path: string, options: BoundedReadOptions): Buffer {
  const fd = openSync(path, openFlags(options));
  try {
    const buffer = bufferFor(fstatSync(fd), options);
    let filled = 0;
    while (filled < buffer.length) {
      const read = readSync(fd, buffer, filled, buffer.length - filled, null);
      if (read === 0) break;
      filled += read;
    }
    return filledPart(buffer, filled);
  } finally {
    closeSync(fd);
  }
}

const openFlags = (options: BoundedReadOptions) =>
  constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY | (options.noFollow ? constants.O_NOFOLLOW : 0);

/** Checks what was opened; a buffer one byte larger than the file, to notice it growing. */
function bufferFor(info: Stats, options: BoundedReadOptions): Buffer {
  if (!info.isFile()) throw new FileRefused(`is not a regular file (${kindOf(info)})`);
  if (info.size > options.maxBytes) throw new FileRefused(`is ${info.size} bytes, more than the ${options.maxBytes} allowed`);
  const problem = options.check?.(info);
  if (problem !== undefined) throw new FileRefused(problem);
  return Buffer.alloc(Math.min(info.size, options.maxBytes) + 1);
}

function filledPart(buffer: Buffer, filled: number): Buffer {
  // One byte more than fstat said: it is being written to; its content is not one version.
  if (filled === buffer.length) throw new FileRefused('grew while read');
  return buffer.subarray(0, filled);
}

/** What a refused non-file is, for the error line. */
function kindOf(info: Stats): string {
  if (info.isFIFO()) return 'a FIFO';
  if (info.isCharacterDevice() || info.isBlockDevice()) return 'a device';
  if (info.isSocket()) return 'a socket';
  if (info.isDirectory()) return 'a directory';
  return 'not a file';
}
