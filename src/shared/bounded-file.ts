import { constants, type Stats } from 'node:fs';
import { open } from 'node:fs/promises';

/** A file refused for what it is (kind, size, owner, mode), never for what it says: the reason holds no content. */
export class FileRefused extends Error {
  override name = 'FileRefused';
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
  const flags = constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY | (options.noFollow ? constants.O_NOFOLLOW : 0);
  const handle = await open(path, flags);
  try {
    const info = await handle.stat();
    if (!info.isFile()) throw new FileRefused(`is not a regular file (${kindOf(info)})`);
    if (info.size > options.maxBytes) throw new FileRefused(`is ${info.size} bytes, more than the ${options.maxBytes} allowed`);
    const problem = options.check?.(info);
    if (problem !== undefined) throw new FileRefused(problem);
    const buffer = Buffer.alloc(Math.min(info.size, options.maxBytes) + 1);
    let filled = 0;
    for (;;) {
      const { bytesRead } = await handle.read(buffer, filled, buffer.length - filled, null);
      if (bytesRead === 0) break;
      filled += bytesRead;
      if (filled === buffer.length) break;
    }
    // One byte more than fstat said: it is being written to; its content is not one version.
    if (filled === buffer.length) throw new FileRefused('grew while read');
    return buffer.subarray(0, filled);
  } finally {
    await handle.close();
  }
}

/** What a refused non-file is, for the error line. */
function kindOf(info: Stats): string {
  if (info.isFIFO()) return 'a FIFO';
  if (info.isCharacterDevice() || info.isBlockDevice()) return 'a device';
  if (info.isSocket()) return 'a socket';
  if (info.isDirectory()) return 'a directory';
  return 'not a file';
}
