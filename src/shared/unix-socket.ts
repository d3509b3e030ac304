import { chmod } from 'node:fs/promises';
import { badFlag } from './errors.ts';

/** A server that listens on a path: node:net's and node:http2's alike. */
export interface UnixListener {
  listen(path: string, listening: () => void): unknown;
  once(event: 'error', listener: (error: Error) => void): unknown;
  off(event: 'error', listener: (error: Error) => void): unknown;
}

/**
 * Listens on the Unix socket at `path` and gives it `mode`. A path it cannot
 * listen on is bad input, named by the flag that chose it.
 */
export async function listenOnUnixSocket(server: UnixListener, { path, mode, flag }: { path: string; mode: number; flag: string }): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(path, () => (server.off('error', reject), resolve()));
  }).catch((error: unknown) => {
    throw badFlag(flag, `cannot listen on ${path} (${(error as Error).message})`, error);
  });
  await chmod(path, mode);
}
