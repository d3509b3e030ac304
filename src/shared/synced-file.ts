import { randomBytes } from 'node:crypto';
import { open, rename, rm } from 'node:fs/promises';

/**
 * Writes `content` to a file only the agent's uid can read (0600, unless
 * `mode` says otherwise) and syncs it before closing: a rename that follows
 * publishes bytes already on disk. `wx` refuses a file that exists (a fresh
 * version directory), `w` replaces a temporary left by a crash.
 */
export async function writeSyncedFile(path: string, content: string | Uint8Array, flags: 'w' | 'wx', mode = 0o600): Promise<void> {
  const file = await open(path, flags, mode);
  try {
    await file.writeFile(content);
    await file.sync();
  } finally {
    await file.close();
  }
}

/**
 * A temporary file (0600 by default, synced) renamed over the target: a crash
 * leaves the old file or the new, never half of one. The temporary's name is
 * unique per write (`wx`), so writes of one target that overlap never share
 * it, and a write that fails removes it.
 */
export async function writeAtomically(path: string, text: string | Uint8Array, mode = 0o600): Promise<void> {
  const temporary = `${path}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  try {
    await writeSyncedFile(temporary, text, 'wx', mode);
    await rename(temporary, path);
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  }
}
